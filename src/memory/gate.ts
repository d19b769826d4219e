/**
 * The one gate everything passes on its way into memory, in this order:
 *
 *   exclusion → private spans → cleanup → redaction → cap
 *
 * 1. Exclusion (`admitWorkspace`): a conversation of an excluded workspace is not read at all; the
 *    caller asks before it opens the history (the engine through its privacy gate, the hook before
 *    it starts a worker, the export reader at each conversation's first line).
 * 2. Private spans: `<private>…</private>` becomes `[PRIVATE]`, found on text whose terminal
 *    control sequences are already gone, across the pieces of one message, keys included.
 * 3. Cleanup: what the runtime or a recall put into a user message (system reminders, recall
 *    blocks and their wrappers), recall blocks stored back as tool output, terminal colouring, line
 *    endings, trailing blanks.
 * 4. Redaction: every credential the rule table knows.
 * 5. Cap: at most MAX_CONTENT_BYTES of text per message, head and tail.
 *
 * Every write path calls it: session import and sync and the hook worker (through the converter),
 * and `import --from-export` (on the agent-memory messages of the file). Pure apart from the
 * exclusion policy's look at the file system (symlinks, `.everme-ignore`), so it runs on any thread.
 */
import type { AgentMessage, AgentToolCall } from '../core/agent-message.js';
import { isPlainObject } from '../core/json.js';
import { capText, MAX_CONTENT_BYTES } from './content-cap.js';
import { PrivateSpans } from '../core/private-spans.js';
import { stripRecallBlocks, stripStoredRecall } from './recall-block.js';
import { redactJsonValue, redactText } from '../core/redact.js';
import { cleanText, stripAnsi, stripSystemReminders, trimBlankEdges } from './text-clean.js';

// ---- 1. exclusion: in its own module, which the hook loads without the rest (see admission.ts).

export { admitWorkspace, type Admission } from './admission.js';

// ---- 2–5. one message

export type GateRole = 'user' | 'assistant' | 'tool';

/** A message's pieces in the order they appear: text blocks, and tool-call arguments (any JSON value). */
export type GateBlock = { type: 'text'; text: string } | { type: 'args'; value: unknown };

export interface GatedMessage {
  /** The text blocks, joined with `\n`, through every stage. */
  text: string;
  /** Each `args` block, in order: spans hidden and credentials masked, shape kept. */
  args: unknown[];
  /** Bytes were left out of the text: the caller warns `oversized_unit`. */
  capped: boolean;
}

/** Stage 3 and 4 for the text of each role. */
const CLEAN_AND_REDACT: Record<GateRole, (s: string) => string> = {
  // The runtime's reminders and a recall the host stored back are not something the user said.
  user: (s) => redactText(trimBlankEdges(cleanText(stripStoredRecall(stripSystemReminders(s))))),
  assistant: (s) => redactText(trimBlankEdges(cleanText(s))),
  // Tool output is kept as written (no edge trimming), except a recall block an MCP tool returned.
  tool: (s) => redactText(cleanText(stripRecallBlocks(s))),
};

/** Spans are looked for once escape sequences are gone, but only text that could hold a tag pays for it. */
function withoutEscapes(s: string): string {
  return s.includes('\x1b') ? stripAnsi(s) : s;
}

export function gateMessage(role: GateRole, blocks: readonly GateBlock[], maxBytes = MAX_CONTENT_BYTES): GatedMessage {
  const spans = new PrivateSpans(withoutEscapes);
  const texts: string[] = [];
  const hiddenArgs: unknown[] = [];
  for (const block of blocks) {
    if (block.type === 'text') texts.push(spans.text(block.text));
    else hiddenArgs.push(spans.json(block.value));
  }
  const { text, capped } = capText(texts.join('\n'), CLEAN_AND_REDACT[role], maxBytes);
  return { text, args: hiddenArgs.map((value) => redactJsonValue(value)), capped };
}

/**
 * An agent-memory message (a line of an export) through stages 2–5: its content, and each tool
 * call's arguments (parsed; a string that is not a JSON object is treated as text). `undefined`
 * when nothing is left of it, as the converter drops such a message.
 */
export function gateAgentMessage(message: AgentMessage, maxBytes = MAX_CONTENT_BYTES): { message?: AgentMessage; capped: boolean } {
  switch (message.role) {
    case 'user': {
      const gated = gateMessage('user', [{ type: 'text', text: message.content }], maxBytes);
      return gated.text === '' ? { capped: gated.capped } : { message: { ...message, content: gated.text }, capped: gated.capped };
    }
    case 'tool': {
      const gated = gateMessage('tool', [{ type: 'text', text: message.content }], maxBytes);
      return { message: { ...message, content: gated.text }, capped: gated.capped };
    }
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      const blocks: GateBlock[] = [];
      if (message.content !== undefined) blocks.push({ type: 'text', text: message.content });
      for (const call of calls) blocks.push({ type: 'args', value: parseArguments(call.arguments) });
      const gated = gateMessage('assistant', blocks, maxBytes);
      const out: AgentMessage = { role: 'assistant', timestamp: message.timestamp, turnComplete: message.turnComplete };
      if (message.content !== undefined && gated.text !== '') out.content = gated.text;
      if (calls.length > 0) {
        out.toolCalls = calls.map((call, i): AgentToolCall => ({ ...call, arguments: encodeArguments(gated.args[i]) }));
      }
      if (out.content === undefined && out.toolCalls === undefined) return { capped: gated.capped };
      return { message: out, capped: gated.capped };
    }
  }
}

function parseArguments(raw: string): unknown {
  try {
    const value: unknown = JSON.parse(raw);
    return isPlainObject(value) ? value : raw;
  } catch {
    return raw;
  }
}

function encodeArguments(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
