import type Database from 'better-sqlite3';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './support/temp.js';
import type { AgentMessage, KeyedMessage } from '../src/core/agent-message.js';
import { openDatabase } from '../src/store/database.js';
import { buildFtsQuery, toFtsText } from '../src/store/fts-text.js';
import { LocalStore, type ConversationRecord } from '../src/store/local-store.js';
import { encodeMessageRows } from '../src/store/message-rows.js';
import { projectParams, PROJECT_KEYS_SQL, type ProjectParams } from '../src/store/conversation-list.js';

let dir: string;
let db: Database.Database;
let store: LocalStore;

beforeEach(() => {
  dir = tempDir('everme-');
  db = openDatabase(dir);
  store = new LocalStore(db);
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

let clock = 1_780_000_000_000;
const user = (content: string): AgentMessage => ({ role: 'user', timestamp: ++clock, content });
const assistant = (content: string, extra: Partial<Extract<AgentMessage, { role: 'assistant' }>> = {}): AgentMessage => ({
  role: 'assistant',
  timestamp: ++clock,
  content,
  turnComplete: true,
  ...extra,
});
const tool = (content: string): AgentMessage => ({ role: 'tool', timestamp: ++clock, toolCallId: 'call_1', content });

function conversation(id: string, workspaceDir = '/home/demo/proj', extra: Partial<ConversationRecord> = {}): ConversationRecord {
  return { conversationId: id, sessionId: `s-${id}`, source: 'messages', workspaceDir, createdAtMs: clock, ...extra };
}

/** Stores one conversation whose messages are keyed k0, k1, … in order. */
function seed(id: string, messages: AgentMessage[], workspaceDir?: string): KeyedMessage[] {
  store.upsertConversation(conversation(id, workspaceDir));
  const keyed = messages.map((message, i) => ({ key: `k${i}`, message }));
  store.appendMessages(id, keyed);
  return keyed;
}

const ids = (query: string, opts?: Parameters<LocalStore['search']>[1]) => store.search(query, opts).map((h) => h.conversationId);

describe('writing', () => {
  it('inserts new keys only and reports how many were new', () => {
    store.upsertConversation(conversation('c1'));
    const first = [
      { key: 'a', message: user('hello') },
      { key: 'b', message: assistant('hi') },
    ];
    expect(store.appendMessages('c1', first)).toBe(2);
    expect(store.appendMessages('c1', [...first, { key: 'c', message: user('again') }, { key: 'c', message: user('dup') }])).toBe(1);
    expect(store.counts()).toEqual({ conversations: 1, messages: 3 });
    expect(store.recentConversations({})[0]!.messageCount).toBe(3);
  });

  it('keeps messages in conversation (insertion) order with their fields', () => {
    store.upsertConversation(conversation('c1'));
    store.appendMessages('c1', [
      { key: 'z', message: user('first') },
      { key: 'a', message: assistant('', { toolCalls: [{ id: 'call_1', type: 'function', name: 'bash', arguments: '{"command":"ls"}' }], turnComplete: false }) },
      { key: 'm', message: tool('out') },
    ]);
    const rows = db.prepare('SELECT msg_key, role, tool_calls_json, tool_call_id, turn_complete FROM messages ORDER BY id').all();
    expect(rows).toEqual([
      { msg_key: 'z', role: 'user', tool_calls_json: null, tool_call_id: null, turn_complete: null },
      { msg_key: 'a', role: 'assistant', tool_calls_json: expect.stringContaining('"bash"') as unknown, tool_call_id: null, turn_complete: 0 },
      { msg_key: 'm', role: 'tool', tool_calls_json: null, tool_call_id: 'call_1', turn_complete: null },
    ]);
  });

  it('refuses messages for a conversation that was never stored', () => {
    expect(() => store.appendMessages('ghost', [{ key: 'a', message: user('x') }])).toThrow(/ghost/);
    expect(store.counts().messages).toBe(0);
  });

  it('appends within a transaction only when one is open, and leaves a failure for it to roll back', () => {
    store.upsertConversation(conversation('c1'));
    expect(() => store.appendRowsWithinTransaction('c1', encodeMessageRows([{ key: 'a', message: user('outside') }]))).toThrow(/open transaction/);
    db.exec(`CREATE TRIGGER fail_second BEFORE INSERT ON messages WHEN NEW.msg_key = 'b'
             BEGIN SELECT RAISE(ABORT, 'forced failure'); END;`);
    const append = db.transaction(() =>
      store.appendRowsWithinTransaction(
        'c1',
        encodeMessageRows([
          { key: 'a', message: user('first') },
          { key: 'b', message: user('second') },
        ]),
      ),
    );
    expect(() => append()).toThrow(/forced failure/);
    expect(store.counts()).toEqual({ conversations: 1, messages: 0 });
    expect(ids('first')).toEqual([]);
  });

  it('removes messages from the table and the full-text index alike', () => {
    seed('c1', [user('the quokka escaped'), assistant('caught the quokka'), user('unrelated')]);
    expect(ids('quokka')).toHaveLength(2);

    expect(store.removeMessages('c1', ['k0', 'k1', 'never-stored'])).toBe(2);
    expect(store.search('quokka')).toEqual([]);
    expect(store.counts().messages).toBe(1);
    const [summary] = store.recentConversations({});
    expect(summary).toMatchObject({ messageCount: 1, firstUserText: 'unrelated' });
    expect(summary!.lastAssistantText).toBeUndefined();
  });
});

describe('full-text search', () => {
  it('finds Chinese substrings of one and two characters inside longer words', () => {
    seed('zh', [user('我们需要调整缓存的优先级策略')]);
    seed('other', [user('完全无关的内容')]);
    expect(ids('优')).toEqual(['zh']);
    expect(ids('优先')).toEqual(['zh']);
    expect(ids('先级策')).toEqual(['zh']);
    expect(ids('级优')).toEqual([]);
  });

  it('finds Japanese kana and Korean substrings', () => {
    seed('ja', [user('ユニットテストを実行してください')]);
    seed('ko', [user('데이터베이스 마이그레이션을 확인했습니다')]);
    expect(ids('テスト')).toEqual(['ja']);
    expect(ids('してく')).toEqual(['ja']);
    expect(ids('데이터')).toEqual(['ko']);
    expect(ids('이그')).toEqual(['ko']);
  });

  it('finds English words case-insensitively, and longer words by a prefix of four or more letters', () => {
    seed('en', [user('The SQLite Migration failed on login')]);
    expect(ids('sqlite')).toEqual(['en']);
    expect(ids('MIGRATION')).toEqual(['en']);
    expect(ids('migrat')).toEqual(['en']);
    expect(ids('logi')).toEqual(['en']);
    // Three letters match whole words only: `log` must not flood results with login/logic/logger.
    expect(ids('log')).toEqual([]);
    expect(ids('igration')).toEqual([]);
  });

  it('finds English glued to CJK: payload优先 inside payload优先级', () => {
    seed('mixed', [user('调整 payload优先级 以后再测')]);
    seed('split', [user('payload 很大，优先处理别的')]);
    expect(ids('payload优先')).toEqual(['mixed']);
  });

  /** Unrelated messages, so that every query word is rare and its BM25 weight positive. */
  const background = (n: number) =>
    seed('background', Array.from({ length: n }, (_, i) => user(`unrelated chatter number ${i} about lunch and weather`)));

  it('ranks by BM25 over every term: a strong partial match may beat a weak full one, and scores descend', () => {
    background(40);
    seed('one', [user('rollback rollback')]);
    seed('weak', [user('deploy the service tomorrow, then go home and rest, and maybe plan a rollback')]);
    seed('strong', [user('deploy rollback')]);
    const hits = store.search('deploy rollback');
    // Expectation changed with issue #26: there is no "full matches first" tier any more. `one`,
    // dense in one of the words, outranks `weak`, which holds both in a long sentence.
    expect(hits.map((h) => h.conversationId)).toEqual(['strong', 'one', 'weak']);
    for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);

    seed('dense', [user('cache cache cache')]);
    seed('sparse', [user('cache is one of many words in this rather long and rambling sentence here')]);
    expect(ids('cache').slice(0, 1)).toEqual(['dense']);
  });

  it('lifts a match whose conversation holds the query words it lacks above an equal lone one', () => {
    background(40);
    // The same message twice; only in `thread` does another message hold the word it lacks
    // (`runbook`). Without the cover signal the tie goes to the newer message, `lone`'s.
    seed('thread', [user('the deploy rollback failed'), assistant('we wrote a runbook after that, with a long list of other steps to take')]);
    seed('lone', [user('the deploy rollback failed')]);
    const hits = store.search('deploy rollback runbook');
    expect(hits.slice(0, 2).map((h) => h.conversationId)).toEqual(['thread', 'lone']);
    expect(store.search('deploy rollback runbook', { ranking: { cover: 0 } })[0]!.conversationId).toBe('lone');
    // Another message holding only words this one holds too completes nothing: no lift.
    seed('echo', [user('the deploy rollback failed'), assistant('the rollback, again: a rollback after a rollback')]);
    const userScore = (c: string) => store.search('deploy rollback').find((h) => h.conversationId === c && h.role === 'user')!.score;
    expect(userScore('echo')).toBe(userScore('lone'));
  });

  it('ranks a short conversation that completes the question above a long one that keeps repeating its words', () => {
    background(40);
    // The user names the subject, the assistant gives the value: each holds part of the question.
    seed('fact', [user('my sister Marta turns forty in May, help me plan'), assistant('A birthday gift idea: a film camera and a photo album')]);
    // A long conversation that keeps returning to the same words, none of them `marta`.
    seed('chatter', [
      user('birthday gift ideas for a coworker?'),
      assistant('Birthday gift ideas: a mug, a plant, a book, a birthday card'),
      user('more birthday gift ideas please, cheaper'),
      assistant('Cheaper birthday gift ideas: socks, candles, a birthday cake'),
      user('and a birthday gift for my neighbour?'),
    ]);
    const query = "what birthday gift should I get for Marta's birthday?";
    expect(ids(query)[0]).toBe('fact');
    // With the older conversation signal (a share of the best other match, whatever its words) the
    // repetition wins.
    expect(ids(query, { ranking: { cover: 0, conversation: 0.5 } })[0]).toBe('chatter');
  });

  it('ranks an old exact match first though 20,000 newer messages match its words', () => {
    seed('old', [user('rollback plan for the payments deploy')]);
    const filler = 'lorem ipsum dolor sit amet '.repeat(8);
    store.upsertConversation(conversation('newer'));
    store.appendMessages(
      'newer',
      Array.from({ length: 20_000 }, (_, i) => ({
        key: `n${i}`,
        // Half hold every word, thinly, in long text; half only some of them.
        message: user(i % 2 === 0 ? `${filler} rollback ${filler} plan ${filler} payments ${filler} deploy ${i}` : `${filler} deploy ${filler} payments ${i}`),
      })),
    );
    const [first] = store.search('rollback plan for the payments deploy');
    expect(first).toMatchObject({ conversationId: 'old', snippet: '**rollback** **plan** for the **payments** **deploy**' });
  });

  it('finds inflections of English words by their stem, and marks them', () => {
    background(40);
    seed('books', [user('I loved reading those two books last month')]);
    seed('paint', [user('We spent the weekend painting the fence blue')]);
    seed('recommend', [assistant('I recommend the oak table for your dining room')]);
    seed('bump', [user('Bump WIDGET_VERSION to 3.')]);
    expect(ids('What books has she read?')[0]).toBe('books');
    expect(store.search('What books has she read?')[0]!.snippet).toContain('**reading** those two **books**');
    expect(ids('painted')).toEqual(['paint']);
    expect(store.search('painted')[0]!.snippet).toContain('**painting**');
    expect(ids('recommended')).toEqual(['recommend']);
    expect(ids('bumped')).toEqual(['bump']);
  });

  it('leaves stopwords out of the query and its marks, yet finds a query of nothing but stopwords', () => {
    background(10);
    seed('widget', [user('the widget version is 3')]);
    seed('filler', [user('it is what it is, and the rest is the same')]);
    seed('also', [user('what is the plan')]);
    const hits = store.search('what is the widget version');
    expect(hits.map((h) => h.conversationId)).toEqual(['widget']);
    expect(hits[0]!.snippet).toBe('the **widget** **version** is 3');
    expect(ids('what is the').length).toBeGreaterThan(0);
    expect(buildFtsQuery('what is the widget version')!.terms.map((t) => t.tokens.join(' '))).toEqual(['widget', 'version']);
  });

  it('keeps the words at the end of a long question: its stopwords do not count towards the 32-word cap', () => {
    seed('build', [user('The build script is the Makefile')]);
    seed('other', [user('billing refactor notes and flaky payments tests')]);
    const question =
      'Earlier this month, while we were working together on the billing service refactor and also fixing some flaky integration tests in the payments module, I remember asking you something rather specific: which file is the build script';
    const words = buildFtsQuery(question)!.terms.map((t) => t.tokens.join(' '));
    expect(words).toEqual(expect.arrayContaining(['build', 'script']));
    expect(words).not.toContain('the');
    expect(ids(question)).toContain('build');
    // Still a cap on the words themselves, and a query of stopwords alone still looks for them.
    expect(buildFtsQuery(Array.from({ length: 40 }, (_, i) => `word${i}`).join(' '))!.terms).toHaveLength(32);
    expect(buildFtsQuery('the who')!.terms.map((t) => t.tokens.join(' '))).toEqual(['the', 'who']);
  });

  it('treats hostile input as text: never throws, never FTS syntax', () => {
    seed('syntax', [user('ratio a:b fixed; x and y; see (x) and NEAR the end')]);
    seed('plain', [user('nothing to see')]);
    const hostile = ['"', '""', '*', 'a:b', '(x', 'x)', 'NEAR(a b)', 'x OR y', '-x', '^x', 'AND', 'OR', 'NOT', 'x AND', '"x', "x'y", 'col:x', '{x}', '\\', 'a'.repeat(2000), '优'.repeat(2000), 'x '.repeat(1000)];
    for (const q of hostile) expect(() => store.search(q), q).not.toThrow();
    expect(ids('a:b')).toEqual(['syntax']);
    expect(ids('(x')).toEqual(['syntax']);
    expect(ids('-x')).toEqual(['syntax']);
    expect(ids('^x')).toEqual(['syntax']);
    expect(ids('AND')).toEqual(['syntax']);
    expect(ids('NEAR(a b)')).toEqual(['syntax']);
    expect(ids('"x')).toEqual(['syntax']);
    expect(ids('x OR y')).toEqual(['syntax']);
  });

  it('returns nothing, without error, for empty, blank or punctuation-only queries', () => {
    seed('c', [user('anything at all, even punctuation !!! ***')]);
    for (const q of ['', '   ', '\n\t', '!!!', '***', '"', '" "', '。、「」', '- ^ : ( )']) {
      expect(store.search(q), JSON.stringify(q)).toEqual([]);
      expect(buildFtsQuery(q)).toBeUndefined();
    }
  });

  it('quotes every term as a phrase so operators stay words', () => {
    // `or` and `y` are English stopwords now, left out of the query (issue #26).
    expect(buildFtsQuery('x OR "y" NEAR(z)')!.phrases).toEqual(['"x"', '"NEAR z"']);
    expect(buildFtsQuery('payload优先')!.phrases).toEqual(['"payload 优 先"']);
    expect(toFtsText('payload优先级 ok')).toBe('payload 优  先  级  ok');
    expect(toFtsText('plain ascii')).toBe('plain ascii');
  });

  it('limits results to 10 by default and 50 at most', () => {
    store.upsertConversation(conversation('many'));
    store.appendMessages(
      'many',
      Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, message: user(`needle number ${i}`) })),
    );
    expect(store.search('needle')).toHaveLength(10);
    expect(store.search('needle', { limit: 1000 })).toHaveLength(50);
    expect(store.search('needle', { limit: 3 })).toHaveLength(3);
  });

  it('filters by project: the directory itself and below, never a sibling sharing its prefix', () => {
    seed('root', [user('needle')], '/work/app');
    seed('child', [user('needle')], '/work/app/packages/api');
    seed('sibling', [user('needle')], '/work/application');
    seed('none', [user('needle')], undefined);
    expect(ids('needle', { project: '/work/app' }).sort()).toEqual(['child', 'root']);
    expect(ids('needle', { project: '/work/app/' }).sort()).toEqual(['child', 'root']);
    expect(ids('needle').sort()).toEqual(['child', 'none', 'root', 'sibling']);
    expect(store.search('needle', { project: '/work/app/packages/api' })[0]).toMatchObject({
      conversationId: 'child',
      sessionId: 's-child',
      role: 'user',
      workspaceDir: '/work/app/packages/api',
    });
  });

  it('searches tool-call names and arguments and tool results', () => {
    seed('tools', [
      assistant('', { toolCalls: [{ id: 'call_1', type: 'function', name: 'ripgrep', arguments: '{"pattern":"fooBar\\nbazQux"}' }], turnComplete: false }),
      tool('permission denied while opening /etc/shadow'),
    ]);
    expect(store.search('ripgrep')[0]).toMatchObject({ conversationId: 'tools', role: 'assistant' });
    // The JSON escape `\n` must not glue `n` onto the next word.
    expect(store.search('bazqux')[0]).toMatchObject({ role: 'assistant' });
    expect(store.search('shadow')[0]).toMatchObject({ role: 'tool' });
  });

  it('indexes a long tool result by its opening and its end only', () => {
    const filler = (n: number) => 'lorem ipsum dolor '.repeat(n);
    seed('big', [tool(`headword ${filler(400)} middleword ${filler(400)} tailword`)]);
    expect(ids('headword')).toEqual(['big']);
    expect(ids('tailword')).toEqual(['big']);
    expect(ids('middleword')).toEqual([]);
  });
});

describe('reading', () => {
  it('searches and lists through a read-only connection while the writer keeps it open', () => {
    seed('c', [user('readonly quokka'), assistant('noted')]);
    const reader = openDatabase(dir, { readonly: true });
    try {
      const view = new LocalStore(reader);
      expect(view.search('quokka').map((h) => h.conversationId)).toEqual(['c']);
      expect(view.recentConversations({}).map((c) => c.conversationId)).toEqual(['c']);
      expect(view.counts()).toEqual({ conversations: 1, messages: 2 });
      expect(() => view.upsertConversation(conversation('x'))).toThrow(/readonly/i);
    } finally {
      reader.close();
    }
  });
});

describe('snippets', () => {
  it('quotes the original text around the match, with the match marked', () => {
    const long = `${'前面的背景说明。'.repeat(30)}我们决定把payload优先级调高一点，然后重新部署。${'后面还有很多别的内容。'.repeat(30)}`;
    seed('zh', [user(long)]);
    const [hit] = store.search('payload优先');
    expect(hit!.snippet).toContain('**payload优先**级调高');
    expect(hit!.snippet).not.toMatch(/优 先/);
    expect(hit!.snippet.startsWith('…')).toBe(true);
    expect(hit!.snippet.endsWith('…')).toBe(true);
    expect(hit!.snippet.replace(/\*\*/g, '').length).toBeLessThanOrEqual(162);
  });

  it('marks every term, keeps case as written, and collapses whitespace', () => {
    seed('en', [user('Fixed the   Flaky\n\ntest by retrying the flaky socket')]);
    const [hit] = store.search('flaky socket');
    expect(hit!.snippet).toBe('Fixed the **Flaky** test by retrying the **flaky** **socket**');
  });

  it('marks the whole word when a prefix matched', () => {
    seed('en', [user('the migrations ran')]);
    expect(store.search('migrat')[0]!.snippet).toBe('the **migrations** ran');
  });
});

describe('recent conversations', () => {
  it('lists the most recently active first with their opening question and last answer', () => {
    seed('old', [user('  old\n question  '), assistant('old answer')], '/p/a');
    const turns = [user('new question'), assistant('draft'), user('follow-up'), assistant('final   answer')];
    seed('new', turns, '/p/b');
    seed('tools-only', [assistant('', { toolCalls: [{ id: 'c', type: 'function', name: 'ls', arguments: '{}' }], turnComplete: false })], '/p/a');

    const recent = store.recentConversations({ limit: 2 });
    expect(recent.map((c) => c.conversationId)).toEqual(['tools-only', 'new']);
    expect(recent[1]).toMatchObject({
      conversationId: 'new',
      sessionId: 's-new',
      source: 'messages',
      workspaceDir: '/p/b',
      messageCount: 4,
      firstUserText: 'new question',
      lastAssistantText: 'final answer',
    });
    expect(recent[1]!.updatedAtMs).toBe(turns[3]!.timestamp);

    const inA = store.recentConversations({ project: '/p/a' });
    expect(inA.map((c) => c.conversationId)).toEqual(['tools-only', 'old']);
    expect(inA[1]).toMatchObject({ firstUserText: 'old question', lastAssistantText: 'old answer' });
    expect(inA[0]!.firstUserText).toBeUndefined();
  });

  it('cuts long previews with an ellipsis', () => {
    seed('long', [user('word '.repeat(500))]);
    const [c] = store.recentConversations({});
    expect(c!.firstUserText!.length).toBeLessThanOrEqual(300);
    expect(c!.firstUserText!.endsWith('…')).toBe(true);
  });

  it('keeps what it knew when a conversation is upserted again without details', () => {
    store.upsertConversation(conversation('c', '/p/x', { historyFile: '/h/messages.jsonl' }));
    store.upsertConversation({ conversationId: 'c', sessionId: 's-c', source: 'messages' });
    store.appendMessages('c', [{ key: 'a', message: user('hi') }]);
    expect(store.recentConversations({})[0]).toMatchObject({ workspaceDir: '/p/x', historyFile: '/h/messages.jsonl' });
  });
});

describe('recent conversations of a project', () => {
  it('are the directory itself and below (either separator), never a sibling sharing its prefix, newest first', () => {
    seed('root', [user('a')], '/work/app');
    seed('child', [user('b')], '/work/app/packages/api');
    seed('windows', [user('c')], '/work/app\\win');
    seed('sibling', [user('d')], '/work/application');
    seed('next-char', [user('e')], '/work/app0');
    seed('none', [user('f')], undefined);
    const inApp = (project: string) => store.recentConversations({ project }).map((c) => c.conversationId);
    expect(inApp('/work/app')).toEqual(['windows', 'child', 'root']);
    expect(inApp('/work/app/')).toEqual(['windows', 'child', 'root']);
    expect(inApp('/work/app/packages')).toEqual(['child']);
    expect(store.recentConversations({}).map((c) => c.conversationId)).toEqual(['none', 'next-char', 'sibling', 'windows', 'child', 'root']);
  });

  it('are chosen from the workspace index alone, without reading a row or scanning every conversation', () => {
    const plan = db
      .prepare<ProjectParams, { detail: string }>(`EXPLAIN QUERY PLAN ${PROJECT_KEYS_SQL}`)
      .all(projectParams('/work/app'))
      .map((row) => row.detail);
    expect(plan.filter((d) => d.includes('SEARCH c USING COVERING INDEX conversations_by_workspace'))).toHaveLength(3);
    expect(plan.some((d) => /^SCAN c\b/.test(d))).toBe(false);
  });

  it('keep the order at the limit: those updated at the same moment by id, undated ones last', () => {
    for (const id of ['e', 'c', 'a', 'd', 'b', 'f', 'u1', 'u0']) seed(id, [user(id)], '/work/app');
    const updatedAt = db.prepare<[number | null, string]>('UPDATE conversations SET updated_at_ms = ? WHERE conversation_id = ?');
    updatedAt.run(3000, 'f');
    for (const id of ['e', 'c', 'a', 'd', 'b']) updatedAt.run(2000, id);
    for (const id of ['u1', 'u0']) updatedAt.run(null, id);
    const inApp = (limit: number) => store.recentConversations({ project: '/work/app', limit }).map((c) => c.conversationId);
    expect(inApp(1)).toEqual(['f']);
    expect(inApp(3)).toEqual(['f', 'a', 'b']);
    expect(inApp(6)).toEqual(['f', 'a', 'b', 'c', 'd', 'e']);
    expect(inApp(7)).toEqual(['f', 'a', 'b', 'c', 'd', 'e', 'u0']);
    expect(inApp(20)).toEqual(['f', 'a', 'b', 'c', 'd', 'e', 'u0', 'u1']);
  });
});
