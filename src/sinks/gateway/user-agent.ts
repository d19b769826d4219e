import { PACKAGE_VERSION } from '../../core/package-root.js';

export const USER_AGENT = `everme-minimaxcode/${PACKAGE_VERSION} node/${process.versions.node}`;

/** EverMe's own clients name the agent they write for: `… (agentId=<id>)`, when the id is known. */
export function userAgentFor(agentId: string | undefined): string {
  // The id comes from a file the user (or EverMe's installer) wrote: keep it to one header-safe token.
  const id = agentId?.trim();
  return id && /^[\x21-\x7e]+$/.test(id) && !/[()]/.test(id) ? `${USER_AGENT} (agentId=${id})` : USER_AGENT;
}
