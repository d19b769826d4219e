import * as z from 'zod';
import { isPlainObject, isRecord } from '../core/json.js';

import type { WarningCode, WarningCollector } from '../core/warnings.js';
import type { HistoryItem } from '../transcript/types.js';
import type { AgentAssistantMessage, AgentToolCall, KeyedMessage } from '../core/agent-message.js';
import { MAX_CONTENT_BYTES } from './content-cap.js';
import { gateMessage, type GateBlock, type GatedMessage, type GateRole } from './gate.js';

/*
 * MiniMax (Pi) message shapes. Objects are loose: unknown keys are ignored. Only what the conversion
 * reads is checked; tool-call and tool-result ids are checked by hand because each failure has its own
 * warning code.
 */
const Timestamp = z.number().int().nonnegative();
const TextBlock = z.object({ type: z.literal('text'), text: z.string() });
/**
 * Images, thinking (redacted or not) and block types newer builds may add: never remembered, so their
 * content is dropped right at parsing.
 */
const IgnoredBlock = z
  .object({ type: z.string().refine((t) => t !== 'text' && t !== 'toolCall') })
  .transform(() => ({ type: 'ignored' as const }));
const ToolCallBlock = z.object({
  type: z.literal('toolCall'),
  id: z.unknown().optional(),
  name: z.unknown().optional(),
  arguments: z.unknown().optional(),
});

/**
 * A text string, or blocks of which only the text ones are read. An absent `content` is empty
 * content (an assistant row with only a `stopReason` has been seen in real captures), not a
 * malformed record.
 */
const Content = z.union([z.string(), z.array(z.union([TextBlock, ToolCallBlock, IgnoredBlock]))]).default('');

const UserMessage = z.object({
  role: z.literal('user'),
  content: Content,
  timestamp: Timestamp,
});

const AssistantMessage = z.object({
  role: z.literal('assistant'),
  content: Content,
  stopReason: z.string().optional(),
  timestamp: Timestamp,
});

const ToolResultMessage = z.object({
  role: z.literal('toolResult'),
  toolCallId: z.unknown().optional(),
  content: Content,
  timestamp: Timestamp,
});

type ContentValue = z.infer<typeof Content>;
type ContentBlock = Exclude<ContentValue, string>[number];

/*
 * Hand-written readers for the well-formed case, far cheaper than the schemas above on every
 * message of a cold import. Each accepts only what its schema accepts and returns what the schema
 * would; anything else returns undefined and the schema decides (and names the failure).
 */

function quickTimestamp(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function quickContent(v: unknown): ContentValue | undefined {
  if (v === undefined) return '';
  if (typeof v === 'string') return v;
  if (!Array.isArray(v)) return undefined;
  const blocks: ContentBlock[] = [];
  for (const block of v as unknown[]) {
    if (!isRecord(block)) return undefined;
    const type = block['type'];
    if (type === 'text') {
      const text = block['text'];
      if (typeof text !== 'string') return undefined;
      blocks.push({ type: 'text', text });
    } else if (type === 'toolCall') {
      const call: ContentBlock = { type: 'toolCall' };
      if ('id' in block) call.id = block['id'];
      if ('name' in block) call.name = block['name'];
      if ('arguments' in block) call.arguments = block['arguments'];
      blocks.push(call);
    } else if (typeof type === 'string') {
      blocks.push({ type: 'ignored' });
    } else {
      return undefined;
    }
  }
  return blocks;
}

function quickUser(v: Record<string, unknown>): z.infer<typeof UserMessage> | undefined {
  const content = quickContent(v['content']);
  const timestamp = v['timestamp'];
  if (v['role'] !== 'user' || content === undefined || !quickTimestamp(timestamp)) return undefined;
  return { role: 'user', content, timestamp };
}

function quickAssistant(v: Record<string, unknown>): z.infer<typeof AssistantMessage> | undefined {
  const content = quickContent(v['content']);
  const { timestamp, stopReason } = v;
  if (v['role'] !== 'assistant' || content === undefined || !quickTimestamp(timestamp)) return undefined;
  if (stopReason === undefined) return { role: 'assistant', content, timestamp };
  return typeof stopReason === 'string' ? { role: 'assistant', content, stopReason, timestamp } : undefined;
}

function quickToolResult(v: Record<string, unknown>): z.infer<typeof ToolResultMessage> | undefined {
  const content = quickContent(v['content']);
  const timestamp = v['timestamp'];
  if (v['role'] !== 'toolResult' || content === undefined || !quickTimestamp(timestamp)) return undefined;
  return 'toolCallId' in v ? { role: 'toolResult', toolCallId: v['toolCallId'], content, timestamp } : { role: 'toolResult', content, timestamp };
}

/** Exposed so a test can hold each quick reader to its schema. */
export const quickReaders = {
  user: { quick: quickUser, schema: UserMessage },
  assistant: { quick: quickAssistant, schema: AssistantMessage },
  toolResult: { quick: quickToolResult, schema: ToolResultMessage },
};

/** Runtime records that are not conversation; the reader filters them, this is only a safety net. */
const NOT_CONVERSATION = new Set(['compactionSummary', 'custom']);

/**
 * The message's blocks as the gate takes them, in order: text blocks, and each tool call's
 * arguments (a span opened in one block runs on into the next). Images, thinking and the like are
 * never remembered.
 */
function gateBlocks(content: ContentValue): GateBlock[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const blocks: GateBlock[] = [];
  for (const block of content) {
    if (block.type === 'text') blocks.push({ type: 'text', text: block.text });
    else if (block.type === 'toolCall') blocks.push({ type: 'args', value: block.arguments });
  }
  return blocks;
}

/** Ids and names are kept verbatim: only "" or a non-string is missing, whitespace is a value. */
function isNonEmptyString(v: unknown): v is string {
  return typeof v === 'string' && v !== '';
}

/** How many calls of the session so far carried an id, split by whether they were kept. */
interface CallsSeen {
  valid: number;
  rejected: number;
}

/**
 * Converts one session's effective history, item by item, into EverMe's agent-memory shape.
 * Stateful: a tool result is judged against the tool calls seen earlier in the same session
 * (MiniMax writes results right after their calls), so use one Converter per session, in order.
 *
 * Warnings (sample = the item's location, never content):
 * - `invalid_record`: unknown role or a message failing its schema; nothing is returned.
 * - `tool_call_missing_id` / `tool_call_missing_name` / `tool_call_invalid_arguments`: one per
 *   dropped call, checked in that order. A dropped call's id is remembered as rejected.
 * - `duplicate_tool_call_id`: once per call whose id an earlier call already used, and once per
 *   kept result whose id was used by several calls (valid or not).
 * - `tool_result_missing_id`: result without a non-empty string id; dropped.
 * - `tool_result_of_rejected_call`: the result's id names exactly one call, and it was rejected;
 *   dropped with it. An id several calls share names none of them uniquely: the result is kept.
 * - `unmatched_tool_result`: no call used the id; kept as it is.
 */
export class Converter {
  private readonly calls = new Map<string, CallsSeen>();

  constructor(
    private readonly warnings: WarningCollector,
    private readonly maxContentBytes = MAX_CONTENT_BYTES,
  ) {}

  convert(item: HistoryItem): KeyedMessage | undefined {
    const role = item.message['role'];
    switch (role) {
      case 'user':
        return this.user(item);
      case 'assistant':
        return this.assistant(item);
      case 'toolResult':
        return this.toolResult(item);
      default:
        if (typeof role === 'string' && NOT_CONVERSATION.has(role)) return undefined;
        this.warn('invalid_record', item);
        return undefined;
    }
  }

  private user(item: HistoryItem): KeyedMessage | undefined {
    const parsed = quickUser(item.message) ?? UserMessage.safeParse(item.message).data;
    if (!parsed) return this.invalid(item);
    const { timestamp } = parsed;
    const { text } = this.gate('user', parsed.content, item);
    // Image-only, reminder-only or hook-context-only: nothing the user said, so nothing to remember
    // (and nothing wrong).
    if (text === '') return undefined;
    return { key: item.key, message: { role: 'user', timestamp, content: text } };
  }

  private assistant(item: HistoryItem): KeyedMessage | undefined {
    const parsed = quickAssistant(item.message) ?? AssistantMessage.safeParse(item.message).data;
    if (!parsed) return this.invalid(item);
    const { stopReason, timestamp } = parsed;
    const { text, args } = this.gate('assistant', parsed.content, item);
    const toolCalls: AgentToolCall[] = [];
    let toolCallBlocks = 0;
    if (typeof parsed.content !== 'string') {
      for (const block of parsed.content) {
        if (block.type !== 'toolCall') continue;
        // The gate's arguments come in the order of the calls, with or without arguments.
        const call = this.toolCall({ ...block, arguments: args[toolCallBlocks] }, item);
        toolCallBlocks++;
        if (call) toolCalls.push(call);
      }
    }

    // Thinking-only, empty, or every call rejected: nothing said, nothing done, no turn ended.
    if (text === '' && toolCalls.length === 0) return undefined;

    const message: AgentAssistantMessage = {
      role: 'assistant',
      timestamp,
      // A message that asked for a tool, even one whose call was dropped, did not end the turn.
      turnComplete: stopReason === 'stop' && text !== '' && toolCallBlocks === 0,
    };
    if (text !== '') message.content = text;
    if (toolCalls.length > 0) message.toolCalls = toolCalls;
    return { key: item.key, message };
  }

  private toolCall(block: z.infer<typeof ToolCallBlock>, item: HistoryItem): AgentToolCall | undefined {
    const { id, name, arguments: args } = block;
    if (!isNonEmptyString(id)) {
      this.warn('tool_call_missing_id', item);
      return undefined;
    }
    const seen = this.calls.get(id) ?? { valid: 0, rejected: 0 };
    if (seen.valid + seen.rejected > 0) this.warn('duplicate_tool_call_id', item);
    this.calls.set(id, seen);

    if (!isNonEmptyString(name)) return this.reject(seen, 'tool_call_missing_name', item);
    if (!isPlainObject(args)) return this.reject(seen, 'tool_call_invalid_arguments', item);
    seen.valid++;
    return { id, type: 'function', name, arguments: JSON.stringify(args) };
  }

  private reject(seen: CallsSeen, code: WarningCode, item: HistoryItem): undefined {
    seen.rejected++;
    this.warn(code, item);
    return undefined;
  }

  private toolResult(item: HistoryItem): KeyedMessage | undefined {
    const parsed = quickToolResult(item.message) ?? ToolResultMessage.safeParse(item.message).data;
    if (!parsed) return this.invalid(item);
    const { toolCallId, timestamp } = parsed;
    if (!isNonEmptyString(toolCallId)) {
      this.warn('tool_result_missing_id', item);
      return undefined;
    }

    const seen = this.calls.get(toolCallId);
    if (!seen) {
      this.warn('unmatched_tool_result', item);
    } else if (seen.valid === 0 && seen.rejected === 1) {
      // The one call with this id was dropped, so this result answers a call memory never saw.
      this.warn('tool_result_of_rejected_call', item);
      return undefined;
    } else if (seen.valid + seen.rejected > 1) {
      this.warn('duplicate_tool_call_id', item);
    }

    // Tool output is kept as written (no edge trimming); an empty output stays "".
    const { text } = this.gate('tool', parsed.content, item);
    return { key: item.key, message: { role: 'tool', timestamp, toolCallId, content: text } };
  }

  /** The message through the gate (spans, cleanup, redaction, cap), with `oversized_unit` when it was cut. */
  private gate(role: GateRole, content: ContentValue, item: HistoryItem): GatedMessage {
    const gated = gateMessage(role, gateBlocks(content), this.maxContentBytes);
    if (gated.capped) this.warn('oversized_unit', item);
    return gated;
  }

  private invalid(item: HistoryItem): undefined {
    this.warn('invalid_record', item);
    return undefined;
  }

  private warn(code: WarningCode, item: HistoryItem): void {
    this.warnings.add(code, item.location);
  }
}
