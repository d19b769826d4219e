import { resolveUserPath } from '../config/exclude.js';
import { conversationIdFor } from '../core/conversation-id.js';
import { parseSinceDate } from '../core/dates.js';
import { EvermeError } from '../core/errors.js';
import { Forgetter, forgetWithoutStore, storeExists, undoWithoutStore, type ConversationSelector, type ForgetCandidate, type ForgetResult } from '../forget/forget.js';
import { renderForget } from '../forget/render-forget.js';
import { withSessionOnDisk, type Undone } from '../forget/undone.js';
import { isSessionId } from '../hook/hook-input.js';
import { holdsMask, maskedWorkspace } from '../store/masked-workspace.js';
import { confirmOnTerminal } from './confirm.js';
import type { FlowContext } from './base-command.js';
import { writeStderr } from './output.js';

const SELECTORS = ['conversation', 'session', 'project', 'before'] as const;

/** What `everme forget` was asked: exactly one selector, and how to go about it. */
export interface ForgetRequest {
  conversation?: string;
  session?: string;
  project?: string;
  before?: string;
  dryRun: boolean;
  yes: boolean;
  undo: boolean;
}

export type ForgetOutcome = { kind: 'undone'; undone: Undone } | { kind: 'forget'; result: ForgetResult };

function selectorOf(request: ForgetRequest): ConversationSelector {
  const given = SELECTORS.filter((name) => request[name] !== undefined);
  if (given.length !== 1) {
    throw new EvermeError('invalid_args', given.length === 0 ? 'Say what to forget' : `Use one selector, not ${given.map((g) => `--${g}`).join(' and ')}`, {
      hint: 'Pass exactly one of --conversation ID, --session ID, --project DIR, --before YYYY-MM-DD.',
    });
  }
  if (request.conversation !== undefined) return { kind: 'conversation', conversationId: request.conversation };
  if (request.session !== undefined) return { kind: 'conversation', conversationId: conversationIdFor(sessionIdGiven(request.session)) };
  if (request.project !== undefined) return { kind: 'project', dir: projectToForget(resolveUserPath(request.project), request) };
  return { kind: 'before', ms: parseSinceDate(request.before ?? '', '--before') };
}

/** A session id as MiniMax Code writes one; anything else (a path, blanks) names no session and is refused. */
function sessionIdGiven(input: string): string {
  const id = input.trim();
  if (isSessionId(id)) return id;
  throw new EvermeError('invalid_args', `--session ${JSON.stringify(id)} is not a session id`, {
    hint: 'A session id is mvs_… (letters, digits, _ and -), as `everme report`, `everme export` or MiniMax Code show it.',
  });
}

/**
 * A directory named after a credential is stored masked, and two such directories are one masked
 * path: forgetting by it would forget the other's conversations too. Listing them is harmless.
 */
function projectToForget(dir: string, request: ForgetRequest): string {
  // The masked form as everme prints it (search, export, report) names every such directory too.
  if (request.dryRun || request.undo || !holdsMask(dir)) return dir;
  throw new EvermeError('invalid_args', `--project ${maskedWorkspace(dir)} holds a credential in its path, stored masked, so it may match other directories too`, {
    code: 'project_path_masked',
    hint: 'List what it matches with --dry-run, then forget each with --conversation ID.',
  });
}

/** Forgetting needs a yes: --yes, or an answer on the terminal after the list of what goes. */
async function confirmForget(forgetter: Forgetter, planned: ForgetCandidate[], context: FlowContext): Promise<void> {
  if (context.json || !process.stdin.isTTY || !process.stderr.isTTY) {
    throw new EvermeError('invalid_args', `Forgetting ${planned.length} conversation(s) needs confirmation`, {
      hint: 'Add --yes to confirm (required with --json or without a terminal); --dry-run lists them first.',
    });
  }
  writeStderr(renderForget(forgetter.dryRun(planned), { asking: true }));
  if (!(await confirmOnTerminal(`Forget these ${planned.length} conversation(s)? [y/N] `, context.signal))) {
    throw new EvermeError('cancelled', 'Nothing was forgotten');
  }
}

/** `everme forget`: plan the selector's conversations, list them (--dry-run), confirm, tombstone; or lift one tombstone (--undo). */
export async function runForget(request: ForgetRequest, context: FlowContext): Promise<ForgetOutcome> {
  const selector = selectorOf(request);
  if (request.undo && selector.kind !== 'conversation') {
    throw new EvermeError('invalid_args', '--undo lifts one tombstone at a time', { hint: 'Use `everme forget --undo --conversation ID`.' });
  }
  const settings = context.settings();
  // No store yet: nothing to list, forget or undo, and none is created to say so. Only a named
  // conversation's tombstone needs one (a session can be forgotten before it is imported).
  if (!storeExists(settings)) {
    if (request.undo && selector.kind === 'conversation') undoWithoutStore(settings, selector.conversationId);
    // Asked for a tombstone too: an id holding a credential is refused before a store is made for it.
    const result = forgetWithoutStore(settings, selector, request.dryRun);
    if (request.dryRun || selector.kind !== 'conversation') return { kind: 'forget', result };
  }
  const forgetter = Forgetter.open(settings);
  try {
    if (request.undo && selector.kind === 'conversation') {
      return { kind: 'undone', undone: await withSessionOnDisk(settings.dataDir, forgetter.undo(selector.conversationId)) };
    }
    const planned = forgetter.plan(selector);
    if (request.dryRun) return { kind: 'forget', result: forgetter.dryRun(planned) };
    if (planned.length === 0) return { kind: 'forget', result: forgetter.nothingMatched() };
    if (!request.yes) await confirmForget(forgetter, planned, context);
    return { kind: 'forget', result: await forgetter.apply(planned, { signal: context.signal }) };
  } finally {
    forgetter.close();
  }
}
