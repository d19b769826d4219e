import type Database from 'better-sqlite3';
import { EvermeError } from '../core/errors.js';
import type { Settings, SinkName } from '../config/settings.js';
import { openDatabase } from '../store/database.js';
import { buildFtsQuery, excerpt, makeSnippet } from '../store/fts-text.js';
import type { GatewayClient } from '../sinks/gateway/gateway-client.js';
import type { GatewaySearchItem } from '../sinks/gateway/gateway-schemas.js';
import { LocalStore, type ConversationSummary } from '../store/local-store.js';
import { clampLimit } from '../store/limits.js';
import { gatewayClientFor } from '../engine/engine-context.js';

export const MAX_RECALL_LIMIT = 50;
/** Conversations an index may list; the renderer trims them to its character budget. */
export const CONTEXT_CONVERSATIONS = 100;
export const CONTEXT_HITS = 5;
const GATEWAY_CONVERSATION_PREFIX = 'minimaxcode-';
const PROFILE_ITEM_CHARS = 500;

/** One search result, whichever store answered; the gateway may leave any field but the snippet unknown. */
export interface RecallHit {
  conversationId: string | null;
  sessionId: string | null;
  role: string | null;
  timestamp: number | null;
  snippet: string;
  score: number | null;
  workspaceDir?: string;
}

export interface RecallSearch {
  hits: RecallHit[];
  /** True when there is nothing stored at all (no database yet, or no messages in it). */
  storeEmpty: boolean;
}

export interface RecallSearchOptions {
  /** 1–50; callers validate, this clamps. */
  limit: number;
  /** Local store only: this directory and everything below it. */
  project?: string;
  signal?: AbortSignal;
}

export interface LocalContext {
  kind: 'local';
  project?: string;
  /** `project`: the listed conversations are the project's; `all`: none matched, these are from everywhere. */
  scope: 'project' | 'all';
  conversations: ConversationSummary[];
  /** Present when a query was given. */
  hits?: RecallHit[];
  hitsScope?: 'project' | 'all';
  storeEmpty: boolean;
}

export interface GatewayContext {
  kind: 'gateway';
  context?: string;
  explicitInfo: string[];
  implicitTraits: string[];
  hits?: RecallHit[];
}

export type RecallContext = LocalContext | GatewayContext;

export interface RecallContextOptions {
  project?: string;
  query?: string;
  signal?: AbortSignal;
}

/** The read side of a sink: what `everme search` and the MCP tools ask. */
export interface Recall {
  readonly sink: SinkName;
  search(query: string, opts: RecallSearchOptions): Promise<RecallSearch>;
  context(opts: RecallContextOptions): Promise<RecallContext>;
  close(): void;
}

/**
 * Reads the embedded store through a read-only connection. The database may not exist yet when a
 * long-lived reader (the MCP server) starts: each call tries again until it does, so memories that
 * a later import creates are found without a restart.
 */
export class LocalRecall implements Recall {
  readonly sink = 'local' as const;
  private db?: Database.Database;
  private store?: LocalStore;

  constructor(private readonly stateDir: string) {}

  private open(): LocalStore | undefined {
    if (this.store) return this.store;
    let db: Database.Database;
    try {
      db = openDatabase(this.stateDir, { readonly: true });
    } catch (err) {
      if (err instanceof EvermeError && err.code === 'database_missing') return undefined;
      throw err;
    }
    this.db = db;
    this.store = new LocalStore(db);
    return this.store;
  }

  private isEmpty(store: LocalStore): boolean {
    return store.counts().messages === 0;
  }

  // Synchronous underneath (SQLite): the Promise is the Recall interface's, which the gateway needs.
  search(query: string, opts: RecallSearchOptions): Promise<RecallSearch> {
    const store = this.open();
    if (!store) return Promise.resolve({ hits: [], storeEmpty: true });
    const hits: RecallHit[] = store.search(query, { limit: clampLimit(opts.limit, MAX_RECALL_LIMIT), project: opts.project });
    return Promise.resolve({ hits, storeEmpty: hits.length === 0 && this.isEmpty(store) });
  }

  context(opts: RecallContextOptions): Promise<LocalContext> {
    const store = this.open();
    const base = opts.project === undefined ? {} : { project: opts.project };
    if (!store) return Promise.resolve({ kind: 'local', ...base, scope: 'all', conversations: [], storeEmpty: true, ...(opts.query === undefined ? {} : { hits: [], hitsScope: 'all' as const }) });

    let scope: LocalContext['scope'] = opts.project === undefined ? 'all' : 'project';
    let conversations = store.recentConversations({ project: opts.project, limit: CONTEXT_CONVERSATIONS });
    if (conversations.length === 0 && scope === 'project') {
      scope = 'all';
      conversations = store.recentConversations({ limit: CONTEXT_CONVERSATIONS });
    }
    const result: LocalContext = { kind: 'local', ...base, scope, conversations, storeEmpty: conversations.length === 0 && this.isEmpty(store) };
    if (opts.query !== undefined) {
      let hitsScope: LocalContext['scope'] = opts.project === undefined ? 'all' : 'project';
      let hits = store.search(opts.query, { limit: CONTEXT_HITS, project: opts.project });
      if (hits.length === 0 && hitsScope === 'project') {
        hitsScope = 'all';
        hits = store.search(opts.query, { limit: CONTEXT_HITS });
      }
      result.hits = hits;
      result.hitsScope = hitsScope;
    }
    return Promise.resolve(result);
  }

  close(): void {
    this.db?.close();
    this.db = undefined;
    this.store = undefined;
  }
}

/** `minimaxcode-mvs_…` names the MiniMax session it came from; other ids say nothing about one. */
function sessionIdOf(conversationId: string | undefined): string | null {
  if (!conversationId?.startsWith(GATEWAY_CONVERSATION_PREFIX)) return null;
  const rest = conversationId.slice(GATEWAY_CONVERSATION_PREFIX.length);
  return rest.length > 0 ? rest : null;
}

export function gatewayHit(item: GatewaySearchItem, query: string): RecallHit {
  const terms = buildFtsQuery(query)?.terms ?? [];
  return {
    conversationId: item.conversationId ?? null,
    sessionId: sessionIdOf(item.conversationId),
    role: item.role ?? null,
    timestamp: item.timestamp ?? null,
    snippet: makeSnippet(item.content, terms),
    score: item.score ?? null,
  };
}

function profileItem(value: unknown): string | undefined {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value === null || value === undefined) return undefined;
  else {
    try {
      text = JSON.stringify(value);
    } catch {
      return undefined;
    }
  }
  const flat = excerpt(text, PROFILE_ITEM_CHARS);
  return flat.length > 0 ? flat : undefined;
}

/** Asks the hosted EverMe gateway: `/mem/search` and `/mem/context`. */
export class GatewayRecall implements Recall {
  readonly sink = 'everme' as const;

  constructor(private readonly client: GatewayClient) {}

  async search(query: string, opts: RecallSearchOptions): Promise<RecallSearch> {
    const result = await this.client.search(query, clampLimit(opts.limit, MAX_RECALL_LIMIT), opts.signal);
    // The gateway cannot tell "nothing stored" from "nothing matched".
    return { hits: result.items.map((item) => gatewayHit(item, query)), storeEmpty: false };
  }

  async context(opts: RecallContextOptions): Promise<GatewayContext> {
    const [context, hits] = await Promise.all([
      this.client.context({}, opts.signal),
      opts.query === undefined ? Promise.resolve(undefined) : this.search(opts.query, { limit: CONTEXT_HITS, signal: opts.signal }),
    ]);
    const items = (values: unknown[] | undefined): string[] =>
      (values ?? []).map(profileItem).filter((v): v is string => v !== undefined);
    const result: GatewayContext = {
      kind: 'gateway',
      explicitInfo: items(context.profile?.explicit_info),
      implicitTraits: items(context.profile?.implicit_traits),
    };
    if (context.context !== undefined && context.context.trim() !== '') result.context = context.context;
    if (hits) result.hits = hits.hits;
    return result;
  }

  close(): void {}
}

/** The recall side of the chosen sink. */
export function openRecall(settings: Settings, sink: SinkName): Recall {
  return sink === 'everme' ? new GatewayRecall(gatewayClientFor(settings)) : new LocalRecall(settings.stateDir);
}
