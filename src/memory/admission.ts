/**
 * Stage 1 of the gate (gate.ts): exclusion, decided before anything of a conversation is read. Its
 * own module because the hook decides it on every tool call: loading it must not load the rest of
 * the gate (the secret rules alone are milliseconds of start-up).
 */
import type { ExclusionPolicy, ExclusionRule } from '../config/exclude.js';

export type Admission = { admitted: true } | { admitted: false; rule: ExclusionRule };

/**
 * Whether a conversation of this workspace may enter memory. An unknown workspace is admitted (it
 * is never guessed; the caller reports it as unknown).
 */
export function admitWorkspace(policy: ExclusionPolicy, workspaceDir: string | undefined): Admission {
  if (workspaceDir === undefined || workspaceDir.trim() === '') return { admitted: true };
  const rule = policy.ruleFor(workspaceDir);
  return rule === undefined ? { admitted: true } : { admitted: false, rule };
}
