import { sessionIdOf } from '../core/conversation-id.js';
import { redactText } from '../core/redact.js';
import { EvermeError } from '../core/errors.js';
import type { Settings, SinkName } from '../config/settings.js';
import { FollowedStore } from '../store/database-reader.js';
import { buildFtsQuery, excerpt, makeSnippet, type SnippetMarks } from '../store/fts-text.js';
import type { GatewayClient } from '../sinks/gateway/gateway-client.js';
import type { GatewaySearchItem } from '../sinks/gateway/gateway-schemas.js';
import { LocalStore, type ConversationSummary, type SearchHit, type StoredMessage } from '../store/local-store.js';
import { clampLimit } from '../store/limits.js';
import { gatewayReadClientFor } from '../engine/engine-context.js';

export const MAX_RECALL_LIMIT = 50;
/** Conversations an index may list; the renderer trims them to its character budget. */
export const CONTEXT_CONVERSATIONS = 100;
export const CONTEXT_HITS = 5;
const PROFILE_ITEM_CHARS = 500;

/** Where a hit comes from: the embedded store's messages, or the gateway's extracted memories. */
export type HitSource = 'local' | 'gateway';

/** One search result, whichever store answered; the gateway may leave any field but the snippet unknown. */
export interface RecallHit {
  /** Opens the message (`mem_get`, `mem_timeline`, `everme get`): `m<n>`; null for a gateway memory. */
  id: string | null;
  source: HitSource;
  conversationId: string | null;
  sessionId: string | null;
  role: string | null;
  timestamp: number | null;
  snippet: string;
  score: number | null;
  workspaceDir?: string;
  /** The conversation's title: what MiniMax Code's session index calls its session (embedded store only). */
  title?: string;
}

export interface RecallSearch {
  hits: RecallHit[];
  /** True when there is nothing stored at all (no database yet, or no messages in it). */
  storeEmpty: boolean;
  /** With a key: the gateway could not be asked, so these are the embedded store's hits alone. */
  gatewayFailure?: { type: string; message: string };
}

export interface RecallSearchOptions {
  /** 1–50; callers validate, this clamps. */
  limit: number;
  /** Local store only: this directory and everything below it. */
  project?: string;
  /** Only messages of this role; a gateway memory whose role is unknown does not pass. */
  role?: StoredMessage['role'];
  /** Only messages at or after this time (epoch ms); a gateway memory with no time does not pass. */
  since?: number;
  /** Only messages before this time (epoch ms). */
  until?: number;
  /** How snippets mark matches: `**like this**` by default, sentinels for the viewer (see `SnippetMarks`). */
  marks?: SnippetMarks;
  signal?: AbortSignal;
}

/** The role and time filters of `opts`, as one store applies them in its ranking query (for a hit in hand). */
export function passesFilters(hit: RecallHit, opts: Pick<RecallSearchOptions, 'role' | 'since' | 'until'>): boolean {
  if (opts.role !== undefined && hit.role !== opts.role) return false;
  if (opts.since === undefined && opts.until === undefined) return true;
  if (hit.timestamp === null) return false;
  return (opts.since === undefined || hit.timestamp >= opts.since) && (opts.until === undefined || hit.timestamp < opts.until);
}

function markOption(opts: RecallSearchOptions): Pick<RecallSearchOptions, 'marks'> {
  return opts.marks === undefined ? {} : { marks: opts.marks };
}

function storeFilters(opts: RecallSearchOptions): Pick<RecallSearchOptions, 'project' | 'role' | 'since' | 'until'> {
  const { project, role, since, until } = opts;
  return {
    ...(project === undefined ? {} : { project }),
    ...(role === undefined ? {} : { role }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
  };
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
  /** The local store that opens hits by id (`mem_get`, `mem_timeline`), in either mode. */
  readonly localStore?: LocalRecall;
  search(query: string, opts: RecallSearchOptions): Promise<RecallSearch>;
  context(opts: RecallContextOptions): Promise<RecallContext>;
  close(): void;
}

/**
 * Reads the embedded store through a read-only connection. The database may not exist yet when a
 * long-lived reader (the MCP server, the viewer) starts: each call tries again until it does, so
 * memories that a later import creates are found without a restart. Each call also checks that the
 * file is still the one it opened: after `uninstall --purge` or a rebuild the old connection would
 * go on answering from the removed file.
 */
export class LocalRecall implements Recall {
  readonly sink = 'local' as const;
  readonly localStore = this;
  private readonly store: FollowedStore<LocalStore>;

  constructor(stateDir: string) {
    this.store = new FollowedStore(stateDir, (db) => new LocalStore(db));
  }

  private open(): LocalStore | undefined {
    return this.store.get();
  }

  private isEmpty(store: LocalStore): boolean {
    return !store.hasMessages();
  }

  // Synchronous underneath (SQLite): the Promise is the Recall interface's, which the gateway needs.
  search(query: string, opts: RecallSearchOptions): Promise<RecallSearch> {
    const store = this.open();
    if (!store) return Promise.resolve({ hits: [], storeEmpty: true });
    // Filters apply inside the ranking: among the messages that pass them, ranked as mem_search ranks.
    const hits = store.search(query, { limit: clampLimit(opts.limit, MAX_RECALL_LIMIT), ...storeFilters(opts), ...markOption(opts) }).map(localHit);
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
      let hits = store.search(opts.query, { limit: CONTEXT_HITS, project: opts.project }).map(localHit);
      if (hits.length === 0 && hitsScope === 'project') {
        hitsScope = 'all';
        hits = store.search(opts.query, { limit: CONTEXT_HITS }).map(localHit);
      }
      result.hits = hits;
      result.hitsScope = hitsScope;
    }
    return Promise.resolve(result);
  }

  /** True when there is a store to read (it may still be empty). */
  exists(): boolean {
    return this.open() !== undefined;
  }

  /**
   * Whole messages by id (`m<n>`), in the order asked. An id that names no stored message is a
   * `not_found` error naming it, so the agent learns which one was wrong.
   */
  get(ids: readonly string[]): StoredMessage[] {
    const rows = ids.map(parseMessageId);
    const store = this.open();
    const found = store ? store.messagesByIds(rows) : [];
    const missing = ids.filter((_, i) => !found.some((m) => m.messageId === rows[i]));
    if (missing.length > 0) throw unknownIds(missing);
    return found;
  }

  /** The message `id` and its neighbours in its conversation, in order. */
  timeline(id: string, before: number, after: number): StoredMessage[] {
    const messages = this.open()?.around(parseMessageId(id), before, after) ?? [];
    if (messages.length === 0) throw unknownIds([id]);
    return messages;
  }

  close(): void {
    this.store.close();
  }
}

/** `m123`, as hits name it; `M123` too, as an agent may retype it. */
const MESSAGE_ID = /^m([1-9]\d{0,15})$/i;

/** The id a hit or an index names for a stored message. */
export function messageIdOf(rowId: number): string {
  return `m${rowId}`;
}

/** The row id a message id (`m123`) names; invalid_args for anything else. */
export function parseMessageId(id: string): number {
  const m = MESSAGE_ID.exec(id.trim());
  if (!m) {
    throw new EvermeError('invalid_args', `Not a message id: ${JSON.stringify(id.slice(0, 40))}`, {
      code: 'invalid_message_id',
      hint: 'Message ids look like m123: take them from a search hit or a recall index.',
    });
  }
  return Number(m[1]);
}

function unknownIds(ids: readonly string[]): EvermeError {
  return new EvermeError('not_found', `No stored message ${ids.map((id) => JSON.stringify(id.slice(0, 40))).join(', ')} in the local store`, {
    code: 'message_not_found',
    hint: 'Ids come from `everme search` or mem_search on this machine; the ids of a forgotten conversation are gone.',
  });
}

function localHit(hit: SearchHit): RecallHit {
  return { id: messageIdOf(hit.messageId), source: 'local', ...hit };
}

export function gatewayHit(item: GatewaySearchItem, query: string, marks?: SnippetMarks): RecallHit {
  const terms = buildFtsQuery(query)?.terms ?? [];
  return {
    id: null,
    source: 'gateway',
    conversationId: item.conversationId ?? null,
    sessionId: sessionIdOf(item.conversationId) ?? null,
    role: item.role ?? null,
    timestamp: item.timestamp ?? null,
    // What the gateway holds may come from any client, masked or not: masked here, whole, before a
    // snippet could cut a credential into pieces the rules no longer know.
    snippet: makeSnippet(redactText(item.content), terms, marks),
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
  const flat = excerpt(redactText(text), PROFILE_ITEM_CHARS);
  return flat.length > 0 ? flat : undefined;
}

/**
 * Asks the hosted EverMe gateway: `/mem/search` and `/mem/context`. With a local store beside it
 * (the engine keeps one in gateway mode too), a search also answers from the store's messages:
 * the two lists are interleaved, gateway first, each hit labelled by its source, and only the local
 * ones carry an id to open.
 */
export class GatewayRecall implements Recall {
  readonly sink = 'everme' as const;

  constructor(
    private readonly client: GatewayClient,
    private readonly local?: LocalRecall,
  ) {}

  get localStore(): LocalRecall | undefined {
    return this.local;
  }

  async search(query: string, opts: RecallSearchOptions): Promise<RecallSearch> {
    const limit = clampLimit(opts.limit, MAX_RECALL_LIMIT);
    let remote: RecallHit[];
    try {
      const result = await this.client.search(query, limit, opts.signal);
      remote = result.items.map((item) => gatewayHit(item, query, opts.marks)).filter((hit) => passesFilters(hit, opts));
    } catch (err) {
      return this.localOnly(query, limit, opts, err);
    }
    const local = this.local ? (await this.local.search(query, { limit, ...storeFilters(opts), ...markOption(opts) })).hits : [];
    // The gateway cannot tell "nothing stored" from "nothing matched".
    return { hits: interleave(remote, local).slice(0, limit), storeEmpty: false };
  }

  /**
   * The gateway failed (unreachable, timed out, a refused key, a 5xx): the embedded store is the
   * user's own index of the same sessions, so its hits are answered, marked as the store's alone.
   * Only when there is a store with something in it, and never for Ctrl-C.
   */
  private async localOnly(query: string, limit: number, opts: RecallSearchOptions, err: unknown): Promise<RecallSearch> {
    if (!this.local || !(err instanceof EvermeError) || err.type === 'cancelled') throw err;
    const local = await this.local.search(query, { limit, ...storeFilters(opts), ...markOption(opts) });
    if (local.storeEmpty) throw err;
    return { hits: local.hits, storeEmpty: false, gatewayFailure: { type: err.type, message: err.message } };
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
    if (context.context !== undefined && context.context.trim() !== '') result.context = redactText(context.context);
    if (hits) result.hits = hits.hits;
    return result;
  }

  close(): void {
    this.local?.close();
  }
}

function interleave<T>(a: readonly T[], b: readonly T[]): T[] {
  const out: T[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) out.push(a[i]!);
    if (i < b.length) out.push(b[i]!);
  }
  return out;
}

/** The recall side of the chosen sink (the gateway's with the local store beside it, see GatewayRecall). */
export function openRecall(settings: Settings, sink: SinkName): Recall {
  return sink === 'everme' ? new GatewayRecall(gatewayReadClientFor(settings), new LocalRecall(settings.stateDir)) : new LocalRecall(settings.stateDir);
}
