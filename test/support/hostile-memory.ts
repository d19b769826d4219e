/**
 * One set of hostile inputs for every path into memory (issue #29): private spans broken by terminal
 * colour codes, opened in a tool-argument key, nested; credentials of every secret rule, the pairs
 * whose secret has no prefix and a key split by a line break; and the markers of sessions whose
 * workspace is excluded (reached through a symlink, or from below a directory with .everme-ignore).
 * Each entry-point test builds its tree from these and checks what reached the sink.
 */
import fs from 'node:fs';
import path from 'node:path';
import { IGNORE_FILE } from '../../src/config/exclude.js';
import type { AgentMessage } from '../../src/core/agent-message.js';
import { AN, rnd, SECRET_CASES } from '../../bench/secret-suite.js';

const ESC = '\x1b';
/** `grep --color=always` wraps a match like this. */
const RED = `${ESC}[01;31m${ESC}[K`;
const OFF = `${ESC}[m${ESC}[K`;

/** Text that must never reach a sink: each is inside a private span. */
export const PRIVATE_MARKERS = {
  colour: 'privcolourQ7D1A',
  colourTool: 'privcolourtoolR2E',
  nested: 'privnestS9F3E',
  key: 'privkeyT8E2B',
  keyTail: 'privkeytailU3C4D',
} as const;

/** Text of the sessions whose workspace is excluded: never in a sink either. */
export const EXCLUDED_MARKERS = { linked: 'excludedlinkedV7Q', below: 'excludedbelowW8R' } as const;

/** Text that must reach the sink: the hostile conversation itself was delivered (no vacuous pass). */
export const VISIBLE_MARKER = 'visiblemarkerX5A6B';

/** A key wrapped by the terminal in the middle of its body. */
const SPLIT_KEY = `sk-proj-${rnd(AN, 70)}9z`;

/** Every secret the inputs hold, as the needle that must not survive. */
export const SECRET_NEEDLES: string[] = [...Object.values(SECRET_CASES).map((c) => c.secret), SPLIT_KEY.slice(8, 40), SPLIT_KEY.slice(40)];

/** Every credential of the rule table, and the split key, one paragraph each. */
export const CREDENTIALS_TEXT = [...Object.values(SECRET_CASES).map((c) => c.positive), `wrapped:\n${SPLIT_KEY.slice(0, 40)}\n${SPLIT_KEY.slice(40)}\n`].join('\n\n');

export const USER_TEXT =
  `please check ${VISIBLE_MARKER}: <${RED}private${OFF}>${PRIVATE_MARKERS.colour}</${RED}private${OFF}> ` +
  `and <private>outer <private>inner</private> ${PRIVATE_MARKERS.nested}</private> done`;

export const TOOL_TEXT = `grep output:\n<${RED}private${OFF}>${PRIVATE_MARKERS.colourTool}</private>\n\n${CREDENTIALS_TEXT}`;

/** Arguments whose first key opens a span that is never closed: the rest of the message is private. */
export function hostileArguments(): Record<string, unknown> {
  return { [`note <private>${PRIVATE_MARKERS.key}`]: `${PRIVATE_MARKERS.keyTail}`, [`${PRIVATE_MARKERS.keyTail}`]: 3 };
}

/** The hostile conversation in MiniMax's (Pi) message shape, timestamps from `t0`. */
export function hostilePiMessages(t0: number): Array<Record<string, unknown>> {
  return [
    { role: 'user', content: [{ type: 'text', text: USER_TEXT }], timestamp: t0 },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'running the tool' },
        { type: 'toolCall', id: 'call_h1', name: 'bash', arguments: { command: `echo ${SECRET_CASES['openai-key']!.positive}`, env: { password: 'Hunter2-plain-pw' } } },
      ],
      stopReason: 'toolUse',
      timestamp: t0 + 1,
    },
    { role: 'toolResult', toolCallId: 'call_h1', toolName: 'bash', content: [{ type: 'text', text: TOOL_TEXT }], isError: false, timestamp: t0 + 2 },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'writing a note' },
        { type: 'toolCall', id: 'call_h2', name: 'write', arguments: hostileArguments() },
      ],
      stopReason: 'toolUse',
      timestamp: t0 + 3,
    },
    { role: 'toolResult', toolCallId: 'call_h2', toolName: 'write', content: [{ type: 'text', text: 'ok' }], isError: false, timestamp: t0 + 4 },
    { role: 'user', content: `credentials pasted:\n\n${CREDENTIALS_TEXT}`, timestamp: t0 + 5 },
    { role: 'assistant', content: [{ type: 'text', text: 'noted' }], stopReason: 'stop', timestamp: t0 + 6 },
  ];
}

/** The same conversation as agent-memory messages, the way a hand-written export file holds it. */
export function hostileAgentMessages(t0: number): AgentMessage[] {
  return [
    { role: 'user', timestamp: t0, content: USER_TEXT },
    {
      role: 'assistant',
      timestamp: t0 + 1,
      turnComplete: false,
      content: 'running the tool',
      toolCalls: [{ id: 'call_h1', type: 'function', name: 'bash', arguments: JSON.stringify({ command: `echo ${SECRET_CASES['openai-key']!.positive}`, env: { password: 'Hunter2-plain-pw' } }) }],
    },
    { role: 'tool', timestamp: t0 + 2, toolCallId: 'call_h1', content: TOOL_TEXT },
    { role: 'assistant', timestamp: t0 + 3, turnComplete: false, content: 'writing a note', toolCalls: [{ id: 'call_h2', type: 'function', name: 'write', arguments: JSON.stringify(hostileArguments()) }] },
    { role: 'tool', timestamp: t0 + 4, toolCallId: 'call_h2', content: 'ok' },
    { role: 'user', timestamp: t0 + 5, content: `credentials pasted:\n\n${CREDENTIALS_TEXT}` },
    { role: 'assistant', timestamp: t0 + 6, turnComplete: true, content: 'noted' },
  ];
}

export interface ExcludedWorkspaces {
  /** EVERME_EXCLUDE names this directory. */
  excluded: string;
  /** A symlink to it: the workspace as the host reports it. */
  linked: string;
  /** Holds an .everme-ignore. */
  ignored: string;
  /** A directory two levels below it: the workspace as the host reports it. */
  below: string;
  /** Not excluded: the hostile conversation's workspace. */
  open: string;
}

/** The directories, on disk (the exclusion looks at real paths and ignore files). */
export function makeWorkspaces(root: string): ExcludedWorkspaces {
  const ws: ExcludedWorkspaces = {
    excluded: path.join(root, 'work', 'client-secret'),
    linked: path.join(root, 'work', 'link-to-client'),
    ignored: path.join(root, 'work', 'notes'),
    below: path.join(root, 'work', 'notes', 'deep', 'sub'),
    open: path.join(root, 'work', 'open'),
  };
  for (const dir of [ws.excluded, ws.below, ws.open]) fs.mkdirSync(dir, { recursive: true });
  fs.symlinkSync(ws.excluded, ws.linked);
  fs.writeFileSync(path.join(ws.ignored, IGNORE_FILE), '');
  return ws;
}

/** `<data>/everme.env` declaring the exclusion (the file route, which the hook reads too). */
export function declareExclusion(dataDir: string, ws: ExcludedWorkspaces): void {
  fs.writeFileSync(path.join(dataDir, 'everme.env'), `# test\nEVERME_EXCLUDE=${ws.excluded}\n`);
}

/** The longest run of letters and digits of a needle, lower-cased: how the full-text index would hold it. */
function ftsToken(needle: string): string | undefined {
  const runs = needle.match(/[A-Za-z0-9]+/g) ?? [];
  const longest = runs.sort((a, b) => b.length - a.length)[0];
  return longest !== undefined && longest.length >= 10 ? longest.toLowerCase() : undefined;
}

/** What of the needles a blob holds: every needle as written, and its index token. Empty means clean. */
export function leaks(blob: string, needles: readonly string[]): string[] {
  const found: string[] = [];
  for (const needle of needles) {
    if (blob.includes(needle)) found.push(needle);
    const token = ftsToken(needle);
    if (token !== undefined && blob.toLowerCase().includes(token)) found.push(`${needle} (as ${token})`);
  }
  return found;
}

/** Every needle that must never reach a sink. */
export const FORBIDDEN: readonly string[] = [...SECRET_NEEDLES, ...Object.values(PRIVATE_MARKERS), ...Object.values(EXCLUDED_MARKERS), 'Hunter2-plain-pw'];

/** The SQLite file's bytes, WAL included, as one string to search. */
export function storeBytes(stateDir: string): string {
  let out = '';
  for (const name of ['everme.db', 'everme.db-wal']) {
    const file = path.join(stateDir, name);
    if (fs.existsSync(file)) out += fs.readFileSync(file).toString('latin1');
  }
  return out;
}
