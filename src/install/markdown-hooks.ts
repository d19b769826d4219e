import { lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from './atomic-write.js';
import type { StepStatus } from './staging.js';

export const HOOK_EVENTS = ['PreToolUse', 'PostToolUse'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export const HOOK_TIMEOUT_SECONDS = 5;

const FILE_NAMES: Record<HookEvent, string> = {
  PreToolUse: 'everme-pre-tool-use',
  PostToolUse: 'everme-post-tool-use',
};

export function hooksDir(dataDir: string): string {
  return path.join(dataDir, 'hooks');
}

export function hookFilePath(dataDir: string, event: HookEvent): string {
  return path.join(hooksDir(dataDir), `${FILE_NAMES[event]}.md`);
}

/** POSIX single quoting: safe for any path, including spaces, `$` and quotes. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command a hook runs: the recorded node on the staged entry point, nothing resolved through
 * PATH. `--route` tells the hook's event log (and so `everme status`) which install route ran it.
 */
export function hookCommand(node: string, runJs: string, route: 'plugin' | 'markdown'): string {
  return `${shellQuote(node)} ${shellQuote(runJs)} hook --route=${route}`;
}

/** A single-quoted word as shellQuote writes it. */
const QUOTED = String.raw`'(?:[^']|'\\'')*'`;
/**
 * The single-quoted words of a command, unquoted again (the node and the entry point a hook runs).
 * A path holding a quote (`/home/o'brien`) is written as `'/home/o'\''brien'`: one word, not three.
 */
export function quotedWords(command: string): string[] {
  return [...command.matchAll(new RegExp(QUOTED, 'g'))].map((m) => m[0].slice(1, -1).replaceAll(String.raw`'\''`, "'"));
}

/**
 * A command `everme install` wrote, of this version or an earlier one (which had no `--route`): a
 * quoted node running a staged runtime's entry point. What decides whether a hook file or the
 * plugin's hook document is everme's to rewrite or remove, whatever else sits beside it.
 */
const EVERME_COMMAND = new RegExp(String.raw`^${QUOTED} '(?:[^']|'\\'')*/everme/runtime/bin/run\.js' hook(?: --route=(?:plugin|markdown))?$`);

export function isEvermeHookCommand(command: string): boolean {
  return EVERME_COMMAND.test(command);
}

const DESCRIPTIONS: Record<HookEvent, string> = {
  PreToolUse: 'Capture this conversation into long-term memory before each tool call (everme)',
  PostToolUse: 'Capture this conversation into long-term memory after each tool call (everme)',
};

/**
 * A user-level MiniMax Code hook: YAML front matter in the plugin hooks.json shape, then a body for
 * the human who finds the file. Strings are JSON-quoted, which YAML reads as double-quoted scalars.
 */
export function renderHookFile(event: HookEvent, command: string): string {
  return [
    '---',
    `name: ${FILE_NAMES[event]}`,
    `description: ${JSON.stringify(DESCRIPTIONS[event])}`,
    'hooks:',
    `  ${event}:`,
    '    - matcher: "*"',
    '      hooks:',
    '        - type: command',
    `          command: ${JSON.stringify(command)}`,
    `          timeout: ${HOOK_TIMEOUT_SECONDS}`,
    '---',
    '',
    `# everme ${event} hook`,
    '',
    'Installed by `everme install`. On every tool call MiniMax Code runs `everme hook`, which hands the',
    'current session to a background worker that copies new messages into long-term memory (the EverMe',
    'gateway when an API key is set in everme.env, otherwise a local SQLite store). It prints nothing,',
    'never blocks the tool call and always exits 0.',
    '',
    'To remove it, run `everme uninstall` (it removes both everme hook files and the `everme-memory`',
    'MCP server entry, and leaves everything else alone).',
    '',
  ].join('\n');
}

export type HookFileResult = { event: HookEvent; path: string; status: StepStatus } | { event: HookEvent; path: string; status: 'skipped'; reason: string };

/** Whether a hook file's text is one install wrote: its front matter runs an everme runtime. */
export function isEvermeHookFile(text: string): boolean {
  const command = readHookCommand(text);
  return command !== undefined && isEvermeHookCommand(command);
}

/**
 * Why the file at a hook path is not everme's to overwrite or remove (a symlink, or a hook whose
 * command is someone else's), or undefined when it is ours or absent. A directory there is left to
 * the write, which fails and is undone (install) or kept (uninstall).
 */
export function foreignHookFile(file: string): string | undefined {
  let text: string;
  try {
    if (lstatSync(file).isSymbolicLink()) return 'it is a symbolic link, not the file everme writes';
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR') return undefined;
    return `everme cannot read it (${code ?? (err as Error).message})`;
  }
  if (isEvermeHookFile(text)) return undefined;
  const command = readHookCommand(text);
  return `it holds a hook everme did not write${command === undefined ? '' : ` (it runs ${command})`}`;
}

export function writeHookFile(dataDir: string, event: HookEvent, command: string, dryRun: boolean): HookFileResult {
  const file = hookFilePath(dataDir, event);
  const foreign = foreignHookFile(file);
  if (foreign) return { event, path: file, status: 'skipped', reason: foreign };
  const next = renderHookFile(event, command);
  let existing: string | undefined;
  try {
    existing = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (existing === next) return { event, path: file, status: 'unchanged' };
  if (!dryRun) writeFileAtomic(file, next, { mode: 0o644 });
  return { event, path: file, status: existing === undefined ? 'created' : 'updated' };
}

/** The command of a hook file we wrote, read back from its front matter (for tests and diagnostics). */
export function readHookCommand(text: string): string | undefined {
  const quoted = /^ {10}command: (".*")$/m.exec(text)?.[1];
  if (quoted === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(quoted);
    return typeof parsed === 'string' ? parsed : undefined;
  } catch {
    return undefined;
  }
}
