import type { InstallResult } from './install-plan.js';
import type { UninstallResult } from './uninstall-plan.js';

const WOULD: Record<string, string> = {
  created: 'would create',
  updated: 'would update',
  removed: 'would remove',
  restored: 'would restore',
};

function statusWord(status: string, dryRun: boolean): string {
  return dryRun ? (WOULD[status] ?? status) : status;
}

function table(rows: Array<{ status: string; step: string; path: string; note?: string }>, dryRun: boolean): string[] {
  const width = Math.max(...rows.map((r) => statusWord(r.status, dryRun).length));
  const stepWidth = Math.max(...rows.map((r) => r.step.length));
  return rows.map((r) => `  ${statusWord(r.status, dryRun).padEnd(width)}  ${r.step.padEnd(stepWidth)}  ${r.path}${r.note ? `  (${r.note})` : ''}`);
}

function apiKeyLine(result: InstallResult): string {
  if (result.apiKey === 'none') {
    return 'No API key configured: memories go to the local store. Set EVERME_API_KEY in everme.env (or run `everme install --api-key …`) to use the EverMe gateway.';
  }
  // A dry run wrote no key: it says what would happen.
  // MiniMax Code runs hooks with an allow-list environment (minimax-sessions.md, hooks): a key only
  // in this shell reaches import and sync run from it, never the hooks.
  if (result.apiKey === 'environment' && result.credentialInFile) {
    return 'A credential set in this environment (EVERME_API_KEY or EVERME_AGENT_TOKEN) is the one import and sync run from it use: they go to the EverMe gateway with it, not with the one in everme.env. MiniMax Code runs hooks without your environment, so they use the one in everme.env.';
  }
  if (result.apiKey === 'environment') {
    return 'A credential is set in this environment only (EVERME_API_KEY or EVERME_AGENT_TOKEN): import and sync run from it go to the EverMe gateway, but MiniMax Code runs hooks without your environment, so they capture to the local store. Run `everme install --api-key …` to write the key to everme.env, which the hooks read.';
  }
  if (result.apiKey === 'set' && result.dryRun) return 'The API key would be written to everme.env: memories would go to the EverMe gateway.';
  return 'A credential is configured in everme.env: memories go to the EverMe gateway.';
}

/**
 * --api-key over an agent token: the key is written but the token stays the one in use (it comes
 * first, as EverMe's installer rotates it), which "a credential is configured" did not say.
 */
function apiKeyNotUsedLine(result: InstallResult): string | undefined {
  const unused = result.apiKeyNotUsed;
  if (unused === undefined) return undefined;
  const where = unused.source === 'everme.env' ? 'in everme.env' : 'in this environment';
  const todo =
    unused.source === 'everme.env'
      ? 'To use the key instead, remove the EVERME_AGENT_TOKEN and EVERME_AGENT_ID lines from everme.env (EverMe\'s own installer wrote them, and writes them again if it runs).'
      : 'To use the key instead, unset EVERME_AGENT_TOKEN in this environment.';
  return `The API key you gave ${result.dryRun ? 'would be' : 'is'} written to everme.env but NOT used: EVERME_AGENT_TOKEN ${where} comes first. ${todo}`;
}

/** The human rendering of an install: one line per step, then the next thing to run. Warnings go to stderr separately. */
export function renderInstall(result: InstallResult): string {
  const lines = [
    `${result.dryRun ? 'everme install --dry-run (nothing written)' : 'everme install'}: ${result.dataDir}`,
    ...table(result.steps, result.dryRun),
    '',
    apiKeyLine(result),
    ...[apiKeyNotUsedLine(result)].filter((line): line is string => line !== undefined),
    `Official EverMe plugin: ${result.officialPlugin.message}.`,
  ];
  if (!result.dryRun) {
    lines.push('', 'Next, import your recent history:', ...result.next.map((cmd) => `  ${cmd}`));
  }
  return lines.join('\n');
}

export function renderUninstall(result: UninstallResult): string {
  return [
    `${result.dryRun ? 'everme uninstall --dry-run (nothing removed)' : 'everme uninstall'}${result.purge ? ' --purge' : ''}: ${result.dataDir}`,
    ...table(result.steps, result.dryRun),
  ].join('\n');
}

/** The warnings for stderr, less those the failure ending the run already says (it is printed too). */
export function renderWarnings(warnings: Array<{ message: string }>, failure?: { message: string }): string[] {
  return warnings.filter((w) => !failure?.message.includes(w.message)).map((w) => `warning: ${w.message}`);
}
