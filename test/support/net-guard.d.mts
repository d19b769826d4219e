/** Types of net-guard.mjs (plain JavaScript so that a spawned `node` can preload it). */
export function isLoopbackHost(host: string): boolean;
