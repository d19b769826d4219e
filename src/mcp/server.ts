import type { Readable, Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { EvermeError, toEvermeError } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';
import { printableLine, printableWords } from '../core/printable-words.js';
import { redactText } from '../core/redact.js';
import { defaultSink, type Settings, type SinkName } from '../config/settings.js';
import { MAX_RECALL_LIMIT, openRecall, parseMessageId, type LocalRecall, type Recall, type RecallHit } from '../recall/recall.js';
import {
  DEFAULT_TIMELINE_SPAN,
  GET_PAGE_CHARS,
  MAX_GET_IDS,
  MAX_TIMELINE_SPAN,
  renderOpened,
  renderTimeline,
  timelineEntry,
} from '../recall/open-messages.js';
import { GET_ANSWER_CHARS, notShownNote, openWithinBudget } from '../recall/get-budget.js';
import { PACKAGE_VERSION } from '../core/package-root.js';
import { renderContextIndex } from '../recall/context-index.js';
import { UnavailableRecall } from '../recall/unavailable-recall.js';
import { boundedQuery, boundedTitle, renderSearchMarkdown } from '../recall/recall-markdown.js';
import { toModel, toModelData } from '../recall/model-output.js';
import { withThousands } from '../core/thousands.js';

export const SERVER_NAME = 'everme';
export const DEFAULT_TOP_K = 5;

export interface RecallServerOptions {
  /** Workspace whose conversations `mem_context` lists first (the server's cwd by default). */
  project?: string;
  /** Diagnostics; stdout belongs to the protocol, so this must write elsewhere (stderr). */
  log?: (line: string) => void;
}

/**
 * Every tool's answer leaves through the one way out to the model (recall/model-output.ts): the text
 * framed and neutralised by `toModel`, structured content string by string by `toModelData`.
 */
interface ToolAnswer {
  text: string;
  structured?: Record<string, unknown>;
}

function answer({ text, structured }: ToolAnswer): CallToolResult {
  return { content: [{ type: 'text', text: toModel(text) }], ...(structured ? { structuredContent: toModelData(structured) } : {}) };
}

/**
 * A tool error's words reach the model masked as the CLI's error words are (printableWords): they may
 * echo an argument (an id, a query) into which a key was pasted, and the model's context is no place
 * for it. redactOutput after, for the printed-output masks (a URL's password, an S3 signature).
 */
function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: redactOutput(printableWords(message)) }], isError: true };
}

/** A blank query is invalid input for a tool, not "search for nothing". */
function blankQueryError(tool: string): CallToolResult {
  return toolError(`${tool}: the query is empty; pass the words to look for.`);
}

const searchInput = {
  query: z.string().describe('What to look for: words or a question, in any language. Plain text; no search syntax.'),
  topK: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`How many results (default ${DEFAULT_TOP_K}; more than ${MAX_RECALL_LIMIT} is capped at ${MAX_RECALL_LIMIT}).`),
};

const compactHit = z.object({
  id: z.string().nullable().describe('Opens the message with mem_get / mem_timeline (m<n>); null for a gateway memory, which has nothing to open.'),
  source: z.enum(['local', 'gateway']).describe('local: a message of the embedded store; gateway: a memory the EverMe gateway extracted.'),
  role: z.string().nullable(),
  time: z.string().nullable().describe('ISO 8601, when known.'),
  project: z.string().nullable().describe('The workspace of the conversation, when known.'),
  conversationId: z.string().nullable(),
  title: z.string().optional().describe('The conversation title, when known.'),
  snippet: z.string().describe('The text around the match, matches marked **like this**.'),
});

const searchOutput = {
  query: z.string().describe('The query echoed back: masked, on one line, at most 120 characters.'),
  hits: z.array(compactHit),
  storeEmpty: z.boolean().describe('True when nothing is stored at all yet.'),
  gatewayFailure: z
    .object({ type: z.string(), message: z.string() })
    .optional()
    .describe('Set when the EverMe gateway could not be asked: the hits are the local store\'s alone.'),
};

const openedShape = z.object({
  id: z.string(),
  conversationId: z.string(),
  sessionId: z.string(),
  role: z.string(),
  time: z.string(),
  project: z.string().optional(),
  title: z.string().optional().describe('The conversation title, when known.'),
  content: z.string().describe(`At most ${withThousands(GET_PAGE_CHARS)} characters from offset.`),
  offset: z.number().int(),
  totalChars: z.number().int(),
  nextOffset: z.number().int().optional().describe('Where the next page starts: call again with this offset.'),
  toolCalls: z
    .array(
      z.object({
        name: z.string(),
        arguments: z.string().describe(`At most ${withThousands(GET_PAGE_CHARS)} characters from offset, like content.`),
        argumentsChars: z.number().int().optional().describe('The arguments\' whole length, when this page does not hold them whole.'),
      }),
    )
    .optional(),
  toolCallId: z.string().optional(),
});

const getInput = {
  ids: z.array(z.string()).min(1).max(MAX_GET_IDS).describe(`Message ids from mem_search, mem_context or mem_timeline (m<n>); at most ${MAX_GET_IDS}.`),
  offset: z.number().int().min(0).optional().describe('For a long message: the character to start from (a previous answer names it as nextOffset).'),
};

const timelineInput = {
  id: z.string().describe('A message id (m<n>).'),
  before: z.number().int().min(0).max(MAX_TIMELINE_SPAN).optional().describe(`Messages before it (default ${DEFAULT_TIMELINE_SPAN}).`),
  after: z.number().int().min(0).max(MAX_TIMELINE_SPAN).optional().describe(`Messages after it (default ${DEFAULT_TIMELINE_SPAN}).`),
};

const timelineOutput = {
  conversationId: z.string(),
  title: z.string().optional().describe('The conversation title, when known.'),
  entries: z.array(z.object({ id: z.string(), role: z.string(), time: z.string(), preview: z.string(), anchor: z.boolean() })),
};

const contextInput = {
  query: z.string().optional().describe('Optional: also include the best search matches for this text.'),
};

/** A title field as structured content carries it: bounded like the text's, absent when there is none. */
function titled(title: string | undefined): { title?: string } {
  const bounded = boundedTitle(title);
  return bounded === undefined ? {} : { title: bounded };
}

/**
 * A hit's time as ISO 8601, or null when unknown: also for a time past what a Date holds (±8.64e15 ms),
 * which an import accepts (any safe integer) and a gateway may send (nanoseconds), and whose
 * `toISOString` threw, failing every search that matched it.
 */
function isoTime(timestamp: number | null): string | null {
  if (timestamp === null || !Number.isFinite(timestamp)) return null;
  const date = new Date(timestamp);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

function compact(hit: RecallHit): z.infer<typeof compactHit> {
  return {
    id: hit.id,
    source: hit.source,
    role: hit.role,
    time: isoTime(hit.timestamp),
    project: hit.workspaceDir ?? null,
    conversationId: hit.conversationId,
    ...titled(hit.title),
    snippet: hit.snippet,
  };
}

/** What every tool shares: the recall source, its annotations, and the guard that turns failures into tool errors. */
interface ToolKit {
  recall: Recall;
  project?: string;
  annotations: { readOnlyHint: boolean; openWorldHint: boolean };
  localAnnotations: { readOnlyHint: boolean; openWorldHint: boolean };
  guarded(tool: string, body: () => ToolAnswer | Promise<ToolAnswer>): Promise<CallToolResult>;
  /** The local store, for the tools that open messages (mem_get, mem_timeline). */
  local(tool: string): LocalRecall;
}

function toolKit(recall: Recall, opts: RecallServerOptions): ToolKit {
  // As every line the CLI prints (output.ts): a failing tool's message can name a path or a value
  // the host or the agent supplied.
  const log = opts.log ?? ((line: string) => process.stderr.write(printableLine(line)));
  return {
    recall,
    ...(opts.project === undefined ? {} : { project: opts.project }),
    annotations: { readOnlyHint: true, openWorldHint: recall.sink === 'everme' },
    localAnnotations: { readOnlyHint: true, openWorldHint: false },
    guarded: async (tool, body) => {
      try {
        return answer(await body());
      } catch (err) {
        const e = toEvermeError(err);
        if (e.type !== 'not_found' && e.type !== 'invalid_args') log(`everme mcp: ${tool} failed: ${e.type}: ${e.message}`);
        return toolError(`${tool} failed (${e.type}): ${e.message}${e.hint ? `\nHint: ${e.hint}` : ''}`);
      }
    },
    local: (tool) => {
      if (recall instanceof UnavailableRecall) throw recall.reason;
      if (!recall.localStore) throw new EvermeError('not_found', `${tool}: there is no local store to open messages from`);
      return recall.localStore;
    },
  };
}

function registerSearch(server: McpServer, kit: ToolKit): void {
  server.registerTool(
    'mem_search',
    {
      title: 'Search long-term memory',
      description:
        'Searches memories from past MiniMax Code sessions (user requests, assistant answers, tool calls), best matches first: a compact list of hits with ids. Open a hit whole with mem_get, or see what surrounds it with mem_timeline. English words match in any inflection; Chinese, Japanese and Korean text by any substring.',
      inputSchema: searchInput,
      outputSchema: searchOutput,
      annotations: kit.annotations,
    },
    async ({ query, topK }, extra) => {
      if (query.trim() === '') return blankQueryError('mem_search');
      const limit = Math.min(MAX_RECALL_LIMIT, topK ?? DEFAULT_TOP_K);
      return kit.guarded('mem_search', async () => {
        const result = await kit.recall.search(query, { limit, project: undefined, signal: extra.signal });
        // The query is echoed masked like stored text: an agent may paste a key into it.
        const shown = redactText(query);
        return {
          text: renderSearchMarkdown(shown, result.hits, result.storeEmpty, result.gatewayFailure),
          // Bounded as the text's heading shows it: the agent's own 100,000-character paste is not handed back whole.
          structured: { query: boundedQuery(shown), hits: result.hits.map(compact), storeEmpty: result.storeEmpty, ...(result.gatewayFailure ? { gatewayFailure: result.gatewayFailure } : {}) },
        };
      });
    },
  );
}

function registerGet(server: McpServer, kit: ToolKit): void {
  server.registerTool(
    'mem_get',
    {
      title: 'Open memories by id',
      description: `Whole messages by the ids mem_search, mem_context or mem_timeline named (at most ${MAX_GET_IDS}), each with its conversation and time. A long message (or long tool call arguments) comes a page of ${withThousands(GET_PAGE_CHARS)} characters at a time (narrower when one message's many calls would pass the answer's ${withThousands(GET_ANSWER_CHARS)}): pass the nextOffset it names as offset for the rest; ids an answer had no room for are named in notShown.`,
      inputSchema: getInput,
      outputSchema: {
        messages: z.array(openedShape),
        notShown: z
          .array(z.string())
          .optional()
          .describe(`Ids this answer had no room for (at most ${withThousands(GET_ANSWER_CHARS)} characters per answer): open them with mem_get, with the same offset.`),
      },
      annotations: kit.localAnnotations,
    },
    async ({ ids, offset }) =>
      kit.guarded('mem_get', () => {
        const { messages, notShown } = openWithinBudget(kit.local('mem_get').get(ids), offset ?? 0);
        const note = notShown.length > 0 ? `\n\n${notShownNote(notShown, offset ?? 0)}` : '';
        return { text: `${renderOpened(messages)}${note}`, structured: { messages, ...(notShown.length > 0 ? { notShown } : {}) } };
      }),
  );
}

function registerTimeline(server: McpServer, kit: ToolKit): void {
  server.registerTool(
    'mem_timeline',
    {
      title: 'Messages around a memory',
      description: `The messages just before and after one message in its conversation, in order, each with its id and opening line (default ${DEFAULT_TIMELINE_SPAN} either side, at most ${MAX_TIMELINE_SPAN}).`,
      inputSchema: timelineInput,
      outputSchema: timelineOutput,
      annotations: kit.localAnnotations,
    },
    async ({ id, before, after }) =>
      kit.guarded('mem_timeline', () => {
        const messages = kit.local('mem_timeline').timeline(id, before ?? DEFAULT_TIMELINE_SPAN, after ?? DEFAULT_TIMELINE_SPAN);
        // `timeline` has parsed the id already (`M24` is `m24`): compare row ids, not spellings.
        const anchorRow = parseMessageId(id);
        const anchor = messages.find((m) => m.messageId === anchorRow) ?? messages[0]!;
        const entries = messages.map((m) => timelineEntry(m, anchor.messageId));
        return { text: renderTimeline(anchor.conversationId, entries, anchor.title), structured: { conversationId: anchor.conversationId, ...titled(anchor.title), entries } };
      }),
  );
}

function registerContext(server: McpServer, kit: ToolKit): void {
  server.registerTool(
    'mem_context',
    {
      title: 'Recent memory for this project',
      description:
        'A compact index of recent conversations in the current project (or, when it has none, in all projects), each naming the ids of the messages it shows, with the best matches for an optional query. At most 10,000 characters.',
      inputSchema: contextInput,
      annotations: kit.annotations,
    },
    async ({ query }, extra) => {
      if (query !== undefined && query.trim() === '') return blankQueryError('mem_context');
      return kit.guarded('mem_context', async () => {
        const ctx = await kit.recall.context({ project: kit.project, query, signal: extra.signal });
        return { text: renderContextIndex(ctx, query === undefined ? undefined : redactText(query)) };
      });
    },
  );
}

/** The MCP tools over one recall source. Tool failures are tool errors (`isError`), never a dead server. */
export function createRecallServer(recall: Recall, opts: RecallServerOptions = {}): McpServer {
  const server = new McpServer({ name: SERVER_NAME, version: PACKAGE_VERSION });
  const kit = toolKit(recall, opts);
  // Registered in the order tools/list names them.
  registerSearch(server, kit);
  registerGet(server, kit);
  registerTimeline(server, kit);
  registerContext(server, kit);
  return server;
}

export interface ServeStdioOptions {
  stdin?: Readable;
  stdout?: Writable;
  /** Aborting it closes the server (Ctrl-C, SIGTERM). */
  signal?: AbortSignal;
}

/**
 * Serves until the client goes away (stdin ends, stdout breaks) or the signal fires. Resolves once
 * the server is closed.
 */
export async function serveStdio(server: McpServer, opts: ServeStdioOptions = {}): Promise<void> {
  if (opts.signal?.aborted) return;
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  const close = (): void => {
    server.close().catch(() => undefined);
  };
  // A client that died leaves a broken pipe: stop serving instead of crashing on EPIPE.
  stdout.on('error', close);
  stdin.once('end', close);
  opts.signal?.addEventListener('abort', close, { once: true });
  await server.connect(new StdioServerTransport(stdin, stdout));
  await closed;
  opts.signal?.removeEventListener('abort', close);
  stdout.off('error', close);
}

export interface ServeRecallOptions {
  /** The settings of the data dir; a failure (no data dir, say) is served as every tool's answer. */
  settings: () => Settings;
  /** `--sink`, when given; else the settings' default. */
  sink: SinkName | undefined;
  /** The project `mem_context` describes first. */
  project: string;
  log: (line: string) => void;
  signal: AbortSignal;
}

/**
 * Where the tools recall from. Settings that cannot be read (the data dir is missing, say) do not
 * stop the server: the host would show only that it failed to start. It serves, and every tool
 * answers why, with the hint, as a tool error; stderr (the host's log) says so once.
 */
function recallFor(opts: ServeRecallOptions): Recall {
  let settings: Settings;
  try {
    settings = opts.settings();
  } catch (err) {
    const reason = toEvermeError(err);
    if (reason.type === 'internal') throw reason;
    opts.log(`everme mcp: ${reason.message}${reason.hint ? ` (${reason.hint})` : ''}; every tool call answers this (restart the server once it is fixed)`);
    return new UnavailableRecall(opts.sink ?? 'local', reason);
  }
  const sink = opts.sink ?? defaultSink(settings);
  opts.log(`everme mcp: serving ${sink === 'everme' ? settings.apiBase : settings.stateDir} for ${opts.project}`);
  return openRecall(settings, sink);
}

/** `everme mcp`: the recall tools over stdio until the client leaves or the signal fires; the store is closed after. */
export async function serveRecall(opts: ServeRecallOptions): Promise<void> {
  const recall = recallFor(opts);
  const server = createRecallServer(recall, { project: opts.project, log: opts.log });
  try {
    await serveStdio(server, { signal: opts.signal });
  } finally {
    recall.close();
  }
}
