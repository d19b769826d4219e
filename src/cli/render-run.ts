import type { RunSummary, SinkSummary } from '../engine/run-summary.js';
import { EvermeError } from '../core/errors.js';
import { INCLUDABLE } from '../engine/session-catalog.js';

export function warningsLine(warnings: RunSummary['warnings']): string {
  const parts = Object.entries(warnings)
    .filter(([, count]) => (count ?? 0) > 0)
    .map(([code, count]) => `${code} ${count}`);
  return parts.length === 0 ? 'warnings: none' : `warnings: ${parts.join(', ')} (see \`everme report\`)`;
}

/** The summary names the projects with the most sessions delivered, up to this many. */
const PROJECTS_SHOWN = 5;

export function renderRunSummary(summary: RunSummary): string {
  const s = summary.sessions;
  const verb = summary.dryRun ? 'would deliver' : 'delivered';
  const sinks = summary.sinks.map((s) => s.sink).join(' + ');
  const lines = [
    `${summary.mode}${summary.dryRun ? ' (dry run)' : ''} → ${sinks}${summary.since ? ` since ${summary.since}` : ''}`,
    `sessions: ${s.scanned} scanned, ${s.delivered} ${verb}, ${s.unchanged} unchanged, ${s.empty} empty, ${s.failed} failed` +
      // Shown when they occur, so the line most runs print stays the same.
      (s.excluded ? `, ${s.excluded} excluded` : '') +
      (s.forgotten ? `, ${s.forgotten} forgotten` : '') +
      (s.skipped ? `, ${s.skipped} skipped (${skippedKindsText(summary.skippedKinds)}; EVERME_INCLUDE_KINDS reads them)` : ''),
    // `sessions` counts a session at any sink, these the named sink's alone: with two, the line names
    // it, or a store that caught up on 4 sessions printed "4 delivered" over "messages: 0 delivered".
    `messages${summary.sinks.length > 1 ? ` (${summary.sink})` : ''}: ${summary.messages} ${verb} in ${summary.requests} requests${summary.removed ? `, ${summary.removed} removed (history rewritten)` : ''}`,
  ];
  const projects = Object.entries(summary.projects).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (projects.length > 0) {
    const shown = projects.slice(0, PROJECTS_SHOWN).map(([dir, n]) => `${dir} (${n})`);
    if (projects.length > PROJECTS_SHOWN) shown.push(`… ${projects.length - PROJECTS_SHOWN} more`);
    lines.push(`projects: ${shown.join(', ')}`);
  }
  const index = summary.sessionIndex;
  if (index?.status === 'ok') lines.push(`session index: ${index.matched} of ${summary.sessions.scanned} sessions known (${index.path}, ${index.schema})`);
  else if (index) lines.push(`session index: unavailable (${index.reason}): ${index.path}`);
  // With more than one sink, each says what it took: a failure at one never holds up the other.
  if (summary.sinks.length > 1) for (const sink of summary.sinks) lines.push(sinkLine(sink, verb));
  if (summary.workspaceUnknown > 0) {
    lines.push(
      `workspace unknown: ${summary.workspaceUnknown} session${summary.workspaceUnknown === 1 ? '' : 's'} (no exclusion could be checked for them; see \`everme report\`)`,
    );
  }
  for (const failure of summary.failures.slice(0, 5)) lines.push(`failed: ${failure.sessionId}: ${failure.type}: ${failure.message}`);
  if (summary.failures.length > 5) lines.push(`failed: … and ${summary.failures.length - 5} more`);

  // Last, so the pointer to the report is what a reader sees at the bottom.
  lines.push(warningsLine(summary.warnings));
  return lines.join('\n');
}

function skippedKindsText(kinds: RunSummary['skippedKinds']): string {
  return INCLUDABLE.filter((kind) => (kinds[kind] ?? 0) > 0)
    .map((kind) => `${kind} ${kinds[kind]}`)
    .join(', ');
}

/**
 * The one warning a run gives when MiniMax Code's session index could not be read (stderr): the
 * run went on, and the sessions it would have named stay workspace-unknown unless a hook said.
 */
export function sessionIndexWarning(summary: RunSummary): string | undefined {
  const index = summary.sessionIndex;
  if (index?.status !== 'unavailable') return undefined;
  return `warning: session_index_unavailable: ${index.path}: ${index.reason} (${index.message}); workspaces, titles and kinds of current sessions are unknown unless a hook reported them`;
}

function sinkLine(s: SinkSummary, verb: string): string {
  // A dry run delivered nothing: its sessions "would deliver", as its messages do.
  const counts = (['delivered', 'unchanged', 'empty', 'failed'] as const).filter((k) => s.sessions[k] > 0).map((k) => `${s.sessions[k]} ${k === 'delivered' ? verb : k}`);
  return `  ${s.sink}: ${counts.length > 0 ? counts.join(', ') : 'no sessions'}; ${s.messages} messages ${verb} in ${s.requests} requests${s.removed ? `, ${s.removed} removed` : ''}`;
}

/** One stderr line per request the gateway acknowledged with a body that could not be read. */
export function invalidResponseLines(summary: RunSummary): string[] {
  const lines = summary.invalidResponses
    .slice(0, 5)
    .map((r) => `warning: gateway_response_invalid: ${r.sessionId}: request ${r.requestId} was answered 2xx with an unreadable body (${r.reason}); counted as delivered, not resent`);
  if (summary.invalidResponses.length > 5) lines.push(`warning: gateway_response_invalid: … and ${summary.invalidResponses.length - 5} more`);
  return lines;
}

/**
 * The exit rule for import and sync: success only when everything was delivered. A run where some
 * sessions failed still committed the others and ends as `conflict`; a run where every session that
 * had something to send failed for one reason ends with that reason's type (an auth failure is
 * exit 3, not 1), even when other sessions had nothing to send.
 */
export function runOutcomeError(summary: RunSummary): EvermeError | undefined {
  if (summary.cancelled) {
    return new EvermeError('cancelled', 'Interrupted: what was acknowledged is committed; run the same command again to continue', {
      detail: { summary },
    });
  }
  const { failed, scanned, delivered } = summary.sessions;
  if (failed === 0) return undefined;
  const types = new Set(summary.failures.map((f) => f.type));
  const first = summary.failures[0];
  // Sessions with nothing to send (unchanged, empty) say nothing about the failure: when no session
  // was delivered, the failed ones decide, so a rejected key exits 3 however many were unchanged.
  if (delivered === 0 && types.size === 1 && first) {
    const which = failed === scanned ? `All ${failed} sessions` : `All ${failed} sessions with something to send`;
    return new EvermeError(first.type as EvermeError['type'], `${which} failed: ${first.message}`, {
      hint: hintFor(first.type),
      detail: { failed, total: scanned, summary },
    });
  }
  return new EvermeError('conflict', `${failed} of ${scanned} sessions failed; the others were delivered and committed`, {
    hint: 'Run the same command again to retry the failed sessions; see the failures above.',
    detail: { failed, total: scanned, summary },
  });
}

function hintFor(type: string): string | undefined {
  switch (type) {
    case 'auth':
      return 'Check the credential `everme status` names (EVERME_AGENT_TOKEN or EVERME_API_KEY; `everme install --api-key <key>`), or use `--sink local`.';
    case 'network':
      return 'The EverMe gateway could not be reached; nothing was lost, run again later.';
    case 'rate_limit':
      return 'The gateway is rate limiting; run again in a few minutes.';
    default:
      return undefined;
  }
}
