/**
 * An integer with thousands separators, exactly as `toLocaleString('en-US')` writes it, without
 * ICU: a process's first `toLocaleString` builds ICU's number formatter (~19 ms here), and
 * SessionStart paid that on the agent's path for one number in the recall block (how far it was
 * trimmed), as `mem_get`'s pages and the MCP server's start did.
 */
export function withThousands(n: number): string {
  if (!Number.isSafeInteger(n)) return n.toLocaleString('en-US');
  const digits = String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ',');
  // -0 too: toLocaleString writes it with its sign.
  return n < 0 || Object.is(n, -0) ? `-${digits}` : digits;
}
