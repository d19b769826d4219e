import type { Readable, Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { toEvermeError } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';
import { MAX_RECALL_LIMIT, type Recall } from '../recall/recall.js';
import { PACKAGE_VERSION } from '../core/package-root.js';
import { renderContextIndex } from '../recall/context-index.js';
import { renderSearchMarkdown } from '../recall/recall-markdown.js';
import { toModel } from '../recall/model-output.js';

export const SERVER_NAME = 'everme';
export const DEFAULT_TOP_K = 5;

export interface RecallServerOptions {
  /** Workspace whose conversations `mem_context` lists first (the server's cwd by default). */
  project?: string;
  /** Diagnostics; stdout belongs to the protocol, so this must write elsewhere (stderr). */
  log?: (line: string) => void;
}

/** Every tool's answer leaves through the one way out to the model (recall/model-output.ts). */
function text(body: string): CallToolResult {
  return { content: [{ type: 'text', text: toModel(body) }] };
}

function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: redactOutput(message) }], isError: true };
}

/** A blank query is invalid input for a tool, not "search for nothing". */
function blankQueryError(tool: string): CallToolResult {
  return toolError(`${tool}: the query is empty; pass the words to look for.`);
}

const searchInput = {
  query: z.string().describe('What to look for: words or phrases, in any language. Plain text; no search syntax.'),
  topK: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`How many results (default ${DEFAULT_TOP_K}; more than ${MAX_RECALL_LIMIT} is capped at ${MAX_RECALL_LIMIT}).`),
};

const contextInput = {
  query: z.string().optional().describe('Optional: also include the best search matches for this text.'),
};

/** The MCP tools over one recall source. Tool failures are tool errors (`isError`), never a dead server. */
export function createRecallServer(recall: Recall, opts: RecallServerOptions = {}): McpServer {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${redactOutput(line)}\n`));
  const server = new McpServer({ name: SERVER_NAME, version: PACKAGE_VERSION });
  const annotations = { readOnlyHint: true, openWorldHint: recall.sink === 'everme' };

  const guarded = async (tool: string, body: () => Promise<string>): Promise<CallToolResult> => {
    try {
      return text(await body());
    } catch (err) {
      const e = toEvermeError(err);
      log(`everme mcp: ${tool} failed: ${e.type}: ${e.message}`);
      return toolError(`${tool} failed (${e.type}): ${e.message}${e.hint ? `\nHint: ${e.hint}` : ''}`);
    }
  };

  server.registerTool(
    'mem_search',
    {
      title: 'Search long-term memory',
      description:
        'Full-text search of memories from past MiniMax Code sessions (user requests, assistant answers, tool calls), best matches first. Finds Chinese, Japanese and Korean text by any substring.',
      inputSchema: searchInput,
      annotations,
    },
    async ({ query, topK }, extra) => {
      if (query.trim() === '') return blankQueryError('mem_search');
      const limit = Math.min(MAX_RECALL_LIMIT, topK ?? DEFAULT_TOP_K);
      return guarded('mem_search', async () => {
        const result = await recall.search(query, { limit, project: undefined, signal: extra.signal });
        return renderSearchMarkdown(query, result.hits, result.storeEmpty);
      });
    },
  );

  server.registerTool(
    'mem_context',
    {
      title: 'Recent memory for this project',
      description:
        'A compact index of recent conversations in the current project (or, when it has none, in all projects), with the best matches for an optional query. At most 10,000 characters.',
      inputSchema: contextInput,
      annotations,
    },
    async ({ query }, extra) => {
      if (query !== undefined && query.trim() === '') return blankQueryError('mem_context');
      return guarded('mem_context', async () => {
        const ctx = await recall.context({ project: opts.project, query, signal: extra.signal });
        return renderContextIndex(ctx, query);
      });
    },
  );

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
