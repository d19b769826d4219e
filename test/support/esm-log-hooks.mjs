// The resolve hook of esm-log.mjs.
import { appendFileSync } from 'node:fs';

let log;

export function initialize(data) {
  log = data.log;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (log && resolved.url.startsWith('file:')) appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}
