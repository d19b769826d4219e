import Database from 'better-sqlite3';
import fs from 'node:fs';
import { makeDirs, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../core/private-dir.js';
import { reindexMessages } from './fts-rebuild.js';
import { TERM_INDEX_SCHEMA, TERM_NOMINEES_SCHEMA, TermIndexWriter } from './term-index.js';
import { maskedTitle } from '../core/masked-title.js';
import { redactText } from '../core/redact.js';
import { busySqliteCode } from '../core/errors.js';
import {
  asDatabaseError,
  assertNotForeign,
  assertNotNewer,
  BUSY_TIMEOUT_MS,
  connect,
  databaseMissing,
  databasePath,
  ioError,
  openReadonlyDatabase,
  sleepSync,
  userVersion,
  type Db,
} from './database-reader.js';

export { databasePath } from './database-reader.js';

/**
 * The page size of a new store: twice SQLite's default. A message's content that does not fit a
 * 4 KiB page spills into a chain of overflow pages, and FTS5 writes its segments as blobs of ~4 KB:
 * with 8 KiB pages fewer pages are written and read back. The 1x bench import, whole processes in
 * turn, four pairs: 2-3 % less time and CPU at the same peak RSS (16 KiB was no faster than 8).
 */
export const PAGE_SIZE = 8192;

/** `bytes` in the pages of `db` (at least one): SQLite counts some of its limits in pages, and stores differ in page size. */
export function pagesOf(db: Db, bytes: number): number {
  return Math.max(1, Math.round(bytes / Number(db.pragma('page_size', { simple: true }))));
}

/**
 * Schema history. Each step runs once, in its own transaction, and bumps `PRAGMA user_version` to its
 * 1-based index. Never edit a released step: append a new one.
 */
/** A step is SQL, or a function for what SQL alone cannot do (re-indexing text cut in code). */
export type Migration = string | ((db: Db) => void);

export const MIGRATIONS: readonly Migration[] = [
  `
  CREATE TABLE conversations (
    conversation_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    source TEXT NOT NULL,
    workspace_dir TEXT,
    history_file TEXT,
    created_at_ms INTEGER,
    updated_at_ms INTEGER,
    message_count INTEGER NOT NULL DEFAULT 0,
    -- Kept on write so listing recent conversations never scans their messages.
    first_user_text TEXT,
    last_assistant_text TEXT
  );
  CREATE INDEX conversations_by_update ON conversations (updated_at_ms DESC);

  CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (conversation_id) ON DELETE CASCADE,
    msg_key TEXT NOT NULL,
    role TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    content TEXT,
    tool_calls_json TEXT,
    tool_call_id TEXT,
    turn_complete INTEGER,
    UNIQUE (conversation_id, msg_key)
  );

  -- Contentless: snippets are cut from messages.content, so the spaced FTS text is never stored twice.
  CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
  );
  -- Merge segments 16 at a time instead of 4: every commit (one per delivered batch) flushes a
  -- segment, and merging less often saved ~10% of import time with no measurable search cost.
  INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 16);

  CREATE TABLE delivered (
    sink TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    msg_key TEXT NOT NULL,
    PRIMARY KEY (sink, conversation_id, msg_key)
  ) WITHOUT ROWID;

  CREATE TABLE fingerprints (
    sink TEXT NOT NULL,
    session_id TEXT NOT NULL,
    file TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms REAL NOT NULL,
    ino INTEGER NOT NULL,
    head_hash TEXT NOT NULL,
    PRIMARY KEY (sink, session_id)
  ) WITHOUT ROWID;

  CREATE TABLE warning_sets (
    id INTEGER PRIMARY KEY,
    -- 'c:<conversationId>', or 'd:<sessionDir>' for sessions without a conversation id.
    set_key TEXT NOT NULL UNIQUE,
    conversation_id TEXT,
    session_id TEXT,
    source TEXT NOT NULL,
    history_file TEXT,
    session_dir TEXT,
    created_at_ms INTEGER,
    workspace_dir TEXT,
    recorded_at_ms INTEGER NOT NULL
  );
  CREATE INDEX warning_sets_by_dir ON warning_sets (session_dir);

  CREATE TABLE warning_entries (
    set_id INTEGER NOT NULL REFERENCES warning_sets (id) ON DELETE CASCADE,
    code TEXT NOT NULL,
    count INTEGER NOT NULL,
    samples_json TEXT NOT NULL,
    PRIMARY KEY (set_id, code)
  ) WITHOUT ROWID;

  CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL,
    finished_at_ms INTEGER,
    status TEXT,
    params_json TEXT NOT NULL,
    summary_json TEXT
  );
  CREATE INDEX runs_by_kind ON runs (kind, id);

  CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    session_dir TEXT,
    workspace_dir TEXT
  );

  CREATE TABLE session_locks (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    pid INTEGER NOT NULL,
    acquired_at_ms INTEGER NOT NULL
  );
  `,
  // 2: conversations whose last delivery to the gateway did not flush (the hook never flushes), so
  // a later sync or import can send the flush on its own even when nothing new is left to send.
  `
  CREATE TABLE flush_state (
    sink TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    pending INTEGER NOT NULL,
    ends_turn INTEGER NOT NULL,
    PRIMARY KEY (sink, conversation_id)
  ) WITHOUT ROWID;
  `,
  // 3: an owed flush is claimed before it is sent (`<pid>:<epoch ms>` of the claimer), so that
  // concurrent runs send it once. Cleared whenever the flush state is written.
  `
  ALTER TABLE flush_state ADD COLUMN flush_claim TEXT;
  `,
  // 4: what the user took back or kept out (#12). A tombstone keeps a forgotten conversation from
  // ever being delivered again, to either sink; session_scope records sessions left out by an
  // exclusion and sessions whose workspace nobody knows (the report says so); imported_exports
  // makes `import --from-export` of one file happen once.
  `
  CREATE TABLE tombstones (
    conversation_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    workspace_dir TEXT,
    forgotten_at_ms INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE session_scope (
    session_id TEXT PRIMARY KEY,
    session_dir TEXT,
    created_at_ms INTEGER,
    workspace_dir TEXT,
    -- 'excluded' | 'workspace_unknown'
    status TEXT NOT NULL,
    rule TEXT,
    recorded_at_ms INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE imported_exports (
    digest TEXT PRIMARY KEY,
    conversations INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    imported_at_ms INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // 5 (issue #10): hook workers recorded each session's workspace (the payload's cwd) in
  // `sessions`, but conversations imported before the first hook kept no workspace. Give them the
  // recorded one once; from now on the worker fills it in as it records it.
  `
  UPDATE conversations
     SET workspace_dir = (SELECT s.workspace_dir FROM sessions s WHERE s.session_id = conversations.session_id)
   WHERE workspace_dir IS NULL
     AND EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = conversations.session_id AND s.workspace_dir IS NOT NULL);
  `,
  // 6 (issue #13): the SessionStart hook lists a project's recent conversations on the agent's
  // path; scanning every conversation made that grow with the history.
  `
  CREATE INDEX conversations_by_workspace ON conversations (workspace_dir, updated_at_ms);
  `,
  // 7 (issue #13): merge the index's segments 64 at a time (FTS5's largest automerge), not 16.
  // Every datum is rewritten once per level it climbs, and with 16-way merges a 10x history climbed
  // about twice as many levels as a 1x one: index merging was the writer thread's fastest-growing
  // cost (15% of it at 10x, against 8% at 1x) and its longest commits (2–3 s, stalling the reader).
  // Measured on the 10x bench tree, interleaved: import 64–73 s against 76–90 s, longest commit
  // 0.7–1.0 s against 2.1–3.0 s; 1x unchanged; search p95 and the bench queries' results unchanged.
  // crisismerge (a level merged at once, inside one commit) at twice that, so a level is merged
  // in steps spread over the following commits first: longest commit 0.4–0.5 s against 0.9–1.0 s.
  `
  INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 64);
  INSERT INTO messages_fts (messages_fts, rank) VALUES ('crisismerge', 128);
  `,
  // 8 (issue #13): a session's conversations by session id. Recording a session's workspace fills
  // it into its conversations that have none, and without this index SQLite found them through the
  // workspace index (workspace IS NULL), visiting every conversation without a workspace: on a
  // 30,000-session store 25 ms a session, which made 3,000 new sessions import 70% slower than into
  // an empty store (with it: 600 such updates in 9 ms against 15 s).
  `
  CREATE INDEX conversations_by_session ON conversations (session_id);
  `,
  // 9 (issue #26): English words are found by their stem ("painted" finds "painting", "bumped"
  // finds "Bump"): the index is rebuilt with FTS5's porter tokenizer over the same unicode61 rules.
  // Porter leaves tokens that are not plain ASCII words alone, so CJK characters (indexed one a
  // token, see fts-text) are matched exactly as before. The merge settings of step 7 are kept.
  (db: Db) => {
    db.exec(`
      DROP TABLE messages_fts;
      CREATE VIRTUAL TABLE messages_fts USING fts5 (
        text,
        content = '',
        contentless_delete = 1,
        tokenize = 'porter unicode61 remove_diacritics 2'
      );
      INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 64);
      INSERT INTO messages_fts (messages_fts, rank) VALUES ('crisismerge', 128);
    `);
    reindexMessages(db);
  },
  // 10 (issue #27): messages per UTC day for the viewer's activity chart (message-days.ts). Counting
  // by day scanned every message (~2 s on the 10x bench store); this table holds a row per day.
  // Filled once here from what is stored; from now on every write keeps it.
  `
  CREATE TABLE message_days (
    day INTEGER PRIMARY KEY,
    messages INTEGER NOT NULL
  );
  INSERT INTO message_days (day, messages) SELECT timestamp / 86400000, count(*) FROM messages GROUP BY 1;
  `,
  // 11 (issue #26): the term index (term-index.ts): postings of the store's most common words and
  // every message's length, so a query of common words is scored in milliseconds, exactly as FTS5's
  // bm25() over every match would score it. Built here from FTS5's own index, once.
  (db: Db) => termIndexStep(db, TERM_INDEX_SCHEMA, (writer) => writer.build()),
  // 12 (issue #27): the viewer's home page counts each workspace's conversations and messages and
  // its last activity (viewer-store.ts). With the workspace index alone that read every
  // conversation's row (previews and all: ~18 MB on the 10x bench store, 2.3 s from a cold disk,
  // 60 ms warm); with message_count in the index the count reads the index only (~1.5 MB, 3–9 ms
  // warm). The index keeps its name and leading columns, so the project listings that use it
  // (conversation-list.ts, the SessionStart hook) read it as before.
  `
  DROP INDEX conversations_by_workspace;
  CREATE INDEX conversations_by_workspace ON conversations (workspace_dir, updated_at_ms, message_count);
  `,
  // 13 (issue #30): what MiniMax Code's session index says about each session (title, kind,
  // visibility, archive flag, parent, the host's times), each source's claim about its workspace
  // with that claim's time, and which one won (src/store/session-meta.ts reads and writes it).
  // The hook's cwd was kept only as sessions.workspace_dir until now: it becomes the cwd claim.
  `
  CREATE TABLE session_meta (
    session_id TEXT PRIMARY KEY,
    -- What the session index said (NULL: it did not say, or never knew the session).
    title TEXT,
    kind TEXT,
    session_type TEXT,
    visibility TEXT,
    archived INTEGER,
    parent_session_id TEXT,
    default_workspace INTEGER,
    project_workspace_dir TEXT,
    host_created_at_ms INTEGER,
    host_updated_at_ms INTEGER,
    -- Each source's claim about the workspace, and when that source said it.
    index_workspace_dir TEXT,
    ledger_workspace_dir TEXT,
    ledger_at_ms INTEGER,
    cwd TEXT,
    cwd_at_ms INTEGER,
    -- The winner ('ledger' | 'index' | 'cwd'), and every claim when they disagreed (JSON).
    workspace_from TEXT,
    workspace_conflict TEXT,
    recorded_at_ms INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX session_meta_by_parent ON session_meta (parent_session_id) WHERE parent_session_id IS NOT NULL;
  INSERT INTO session_meta (session_id, cwd, recorded_at_ms)
    SELECT session_id, workspace_dir, 0 FROM sessions WHERE workspace_dir IS NOT NULL;
  `,
  // 14 (issue #28): what the store knows of words not common yet (term-index.ts, `nominate`), kept
  // across processes: each process used to start knowing nothing, and on the 10x bench store a sync
  // of 3,000 sessions then read FTS5's count of 3,882 words. Started here from FTS5's counts, once.
  (db: Db) => termIndexStep(db, TERM_NOMINEES_SCHEMA, (writer) => writer.snapshot()),
  // 15 (issue #28): what each session directory's manifest.json said, with the file's stat when it
  // was read (session-manifests.ts): a walk reads a manifest again only when that stat changed.
  `
  CREATE TABLE session_manifests (
    day_dir TEXT NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms REAL NOT NULL,
    ino INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    created_at_ms REAL NOT NULL,
    updated_at_ms REAL,
    PRIMARY KEY (day_dir, name)
  ) WITHOUT ROWID;
  `,
  // 16: titles are masked for credentials like every other stored text (a title is often the first
  // prompt); earlier releases stored the session index's title as it was.
  (db: Db) => maskStoredTitles(db, redactText),
  // 17: which process runs a run (`processStamp`: pid, and its start time where the OS tells it).
  // A run killed outright (kill -9, power loss) never records its end: with its owner known, status
  // says it was interrupted rather than running forever, and sync's horizon takes in an interrupted
  // import's --since so the next sync completes what it left (run-store.ts). Older rows have none.
  `
  ALTER TABLE runs ADD COLUMN owner TEXT;
  `,
  // 18: a title's `<private>` spans become `[PRIVATE]` too (masked-title.ts); earlier releases kept
  // them in the stored title, which search, recall, export and the viewer then showed.
  (db: Db) => maskStoredTitles(db, maskedTitle),
  // 19: a message id (`m1042`, the row id) is never given to another message. SQLite gives a new row
  // the largest row id + 1, so ids freed at the top (a forgotten conversation, a rewound turn) came
  // back and `get` opened an unrelated message under an id shown earlier. The highest id ever
  // deleted is kept here (a trigger, so every way of deleting counts), and the store's writer starts
  // above it when the table's largest id is below (local-store.ts). AUTOINCREMENT would do the same
  // but needs the messages table rebuilt, and costs every insert a write to sqlite_sequence; this
  // costs a delete one upsert and an append one lookup in a table that is usually empty.
  `
  CREATE TABLE message_id_floor (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    id INTEGER NOT NULL
  );
  CREATE TRIGGER messages_keep_id_floor AFTER DELETE ON messages BEGIN
    INSERT INTO message_id_floor (one, id) VALUES (1, OLD.id) ON CONFLICT (one) DO UPDATE SET id = max(id, excluded.id);
  END;
  `,
  // 20: a title loses its terminal controls before its spans are looked for (masked-title.ts):
  // earlier releases kept `\x1b[31m` and other controls in the stored title, where an escape inside
  // a tag hid a `<private>` span from the scan and search, report and status printed them raw.
  (db: Db) => maskStoredTitles(db, maskedTitle),
];

function maskStoredTitles(db: Db, mask: (title: string) => string): void {
  const update = db.prepare<[string, string]>('UPDATE session_meta SET title = ? WHERE session_id = ?');
  const rows = db.prepare<[], { session_id: string; title: string }>('SELECT session_id, title FROM session_meta WHERE title IS NOT NULL').all();
  for (const row of rows) {
    const masked = mask(row.title);
    if (masked !== row.title) update.run(masked, row.session_id);
  }
}

/** A migration of the term index: its tables, then what a writer fills them with from FTS5. */
function termIndexStep(db: Db, schema: string, fill: (writer: TermIndexWriter) => void): void {
  db.exec(schema);
  const writer = new TermIndexWriter(db);
  try {
    fill(writer);
  } finally {
    writer.close();
  }
}

export interface OpenDatabaseOptions {
  /** For readers (search, MCP): never creates, never migrates. */
  readonly?: boolean;
  /**
   * For commands that read or curate what is there (`report`, `status`, `forget`): an existing store
   * is opened (and brought up to date) as usual, a missing one is `database_missing`, never created.
   */
  mustExist?: boolean;
}

/** Opens (creating on first use) the one state file: embedded memory store and engine state. */
export function openDatabase(stateDir: string, opts: OpenDatabaseOptions = {}): Db {
  if (opts.readonly) return openReadonlyDatabase(stateDir);
  const file = databasePath(stateDir);

  try {
    if (!opts.mustExist) makeDirs(stateDir, PRIVATE_DIR_MODE);
    // Created here rather than by SQLite so the file (and its -wal/-shm, which copy its mode) is private.
    // `r+` rather than a check then `a`: a store removed meanwhile is not created again.
    const fd = fs.openSync(file, opts.mustExist ? 'r+' : 'a', PRIVATE_FILE_MODE);
    try {
      // Exact whatever the umask (and tightened should an older file be wider).
      fs.fchmodSync(fd, PRIVATE_FILE_MODE);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if (opts.mustExist && (err as NodeJS.ErrnoException).code === 'ENOENT') throw databaseMissing(file);
    throw ioError(`Cannot create the everme database at ${file}`, file, err);
  }

  const db = connect(file, {});
  try {
    assertNotNewer(db, file);
    assertNotForeign(db, file);
    // Before anything is written (SQLite ignores it on a database that has pages); a store created
    // by an earlier release keeps its 4 KiB pages, which every version reads.
    db.pragma(`page_size = ${PAGE_SIZE}`);
    useWal(db);
    db.pragma('synchronous = NORMAL');
    // A page SQLite rebuilds (a split, a root that grows a level) would keep old copies of its rows in
    // its free space, where a forget's own `secure_delete` never reaches: every writer zeroes that
    // space as it goes. FAST adds no I/O: whole pages freed are left to the forget, which zeroes
    // every free page (forget-store.ts).
    db.pragma('secure_delete = FAST');
    db.pragma('foreign_keys = ON');
    migrate(db);
    return db;
  } catch (err) {
    db.close();
    throw asDatabaseError(err, file);
  }
}

/** How long a store's open waits before it asks again to switch a fresh store to WAL. */
const WAL_SWITCH_RETRY_MS = 20;

/**
 * Puts the store in WAL mode (a no-op once it is). Switching a fresh file takes its exclusive lock,
 * and SQLite answers SQLITE_BUSY at once, without waiting its busy timeout, when another connection
 * holds a lock on the file: two everme processes creating the store at the same moment (a sync and
 * a hook worker, two imports) made one of them fail. Asked again until the busy timeout: by then
 * the other process has switched it (the file says `wal`) or let go of its lock.
 */
function useWal(db: Db): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if (busySqliteCode(err) === undefined || Date.now() >= deadline) throw err;
      sleepSync(WAL_SWITCH_RETRY_MS);
    }
  }
}

/** A throwaway database with the full schema, for dry runs that must not create state on disk. */
export function openMemoryDatabase(): Db {
  const db = new Database(':memory:');
  db.pragma('foreign_keys = ON');
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  // Up to date (every open but the first of a release): no write lock, so opening a store another
  // process is writing to does not wait for it. A version never goes back, so reading it outside a
  // transaction is safe; a store behind takes each step below under its lock.
  if (userVersion(db) >= MIGRATIONS.length) return;
  for (let step = 0; step < MIGRATIONS.length; step++) {
    // IMMEDIATE and a re-read inside: two processes opening a fresh file never run a step twice.
    db.transaction(() => {
      if (userVersion(db) > step) return;
      const migration = MIGRATIONS[step]!;
      if (typeof migration === 'string') db.exec(migration);
      else migration(db);
      db.pragma(`user_version = ${step + 1}`);
    }).immediate();
  }
}

