import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, repoRoot } from './support/cli.js';
import { hermeticEnv } from './support/hermetic-env.js';
import { tempDir } from './support/temp.js';

const fixture = path.join(repoRoot, 'fixtures', 'report');
const BAD = 'mvs_4e9a7c1d2b3f40c8a6d5e4f3b2a1c0d9';
const CLEAN = 'mvs_c1ea9c1ea9c1ea9c1ea9c1ea9c1ea9c1';

function setup() {
  const dataDir = tempDir('everme-report-');
  fs.cpSync(fixture, dataDir, { recursive: true });
  const env = hermeticEnv(dataDir, { EVERME_STATE_DIR: path.join(dataDir, 'state') });
  const run = (...args: string[]) => spawnSync(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), ...args, '--data-dir', dataDir], { env, encoding: 'utf8' });
  const json = (...args: string[]) => {
    const r = run(...args, '--json');
    return { status: r.status, body: JSON.parse(r.stdout) as { ok: boolean; data: Record<string, unknown> & { conversations: ReportRow[]; totals: Record<string, number> } } };
  };
  return { dataDir, run, json };
}

interface ReportRow {
  conversationId: string | null;
  sessionId: string | null;
  source: string;
  warnings: Array<{ code: string; count: number; samples: Array<{ file: string; line: number }> }>;
}

const expectedBad = [
  { code: 'invalid_json', count: 2, samples: [{ file: 'messages.jsonl', line: 2 }, { file: 'messages.jsonl', line: 6 }] },
  { code: 'invalid_record', count: 1, samples: [{ file: 'messages.jsonl', line: 3 }] },
  { code: 'incomplete_tail', count: 1, samples: [{ file: 'messages.jsonl', line: 8 }] },
  { code: 'tool_call_missing_id', count: 1, samples: [{ file: 'messages.jsonl', line: 4 }] },
  { code: 'unmatched_tool_result', count: 1, samples: [{ file: 'messages.jsonl', line: 5 }] },
];

describe('everme report', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it('lists exact counts per code for each conversation, and totals, in JSON', () => {
    const { json } = setup();
    expect(json('import', '--since', '2026-10-01').status).toBe(0);
    const { status, body } = json('report');
    expect(status).toBe(0);
    const bad = body.data.conversations.find((c) => c.sessionId === BAD)!;
    expect(bad).toMatchObject({ conversationId: `minimaxcode-${BAD}`, source: 'messages' });
    expect(bad.warnings).toEqual(expectedBad);
    const manifest = body.data.conversations.find((c) => c.source === 'manifest')!;
    expect(manifest.warnings).toEqual([{ code: 'invalid_manifest', count: 1, samples: [{ file: 'manifest.json', line: 0 }] }]);
    expect(body.data.conversations.some((c) => c.sessionId === CLEAN)).toBe(false);
    expect(body.data.totals).toEqual({
      invalid_manifest: 1,
      invalid_json: 2,
      invalid_record: 1,
      incomplete_tail: 1,
      tool_call_missing_id: 1,
      unmatched_tool_result: 1,
    });
  });

  it('counts a session directory that holds history but no manifest; an empty one being created is not a warning', () => {
    const { dataDir, json } = setup();
    const day = path.join(dataDir, 'v2', 'sessions', '2026', '10', '03');
    const lost = path.join(day, '09-00-00-000-session_bXZzX2xvc3Q');
    fs.mkdirSync(lost, { recursive: true });
    fs.writeFileSync(path.join(lost, 'messages.jsonl'), '{"message_id":"m1","turn_id":"t1","message":{"role":"user","content":"hello","timestamp":1791018000000}}\n');
    fs.mkdirSync(path.join(day, '09-00-01-000-session_bXZzX25ldw'), { recursive: true });
    expect(json('import', '--since', '2026-10-01').status).toBe(0);
    const { body } = json('report');
    expect(body.data.totals.invalid_manifest).toBe(2);
    const rows = body.data.conversations.filter((c) => c.source === 'manifest');
    expect(rows).toHaveLength(2);
    const dirs = rows.map((c) => (c as ReportRow & { sessionDir?: string }).sessionDir);
    expect(dirs).toContain(lost);
    expect(dirs.every((dir) => !dir?.endsWith('session_bXZzX25ldw'))).toBe(true);
  });

  it('shows a table grouped by conversation with file:line samples and never content', () => {
    const { run } = setup();
    run('import', '--since', '2026-10-01');
    const r = run('report');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(BAD);
    expect(r.stdout).toContain('2026-10-02');
    expect(r.stdout).toMatch(/invalid_json\s+2\s+messages\.jsonl:2, messages\.jsonl:6/);
    expect(r.stdout).toMatch(/unmatched_tool_result\s+1\s+messages\.jsonl:5/);
    expect(r.stdout).toMatch(/totals:[\s\S]*invalid_json\s+2/);
    // The malformed lines' text never reaches the report.
    expect(r.stdout).not.toContain('not json');
    expect(r.stdout).not.toContain('out of memory');
    expect(r.stdout).not.toContain('still being wri');
  });

  it('replaces a conversation\'s warnings on re-read instead of adding to them', () => {
    const { dataDir, json } = setup();
    json('import', '--since', '2026-10-01');
    const session = fs.readdirSync(path.join(dataDir, 'v2/sessions/2026/10/02')).find((n) => n.startsWith('10-'))!;
    const file = path.join(dataDir, 'v2/sessions/2026/10/02', session, 'messages.jsonl');
    // Same content, new mtime: the session is read again.
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(file, later, later);
    expect(json('sync', '--since', '2026-10-01').body.data).toMatchObject({ sessions: { delivered: 0, unchanged: 2 } });
    json('import', '--since', '2026-10-01');
    const { body } = json('report', '--conversation', BAD);
    expect(body.data.conversations).toHaveLength(1);
    expect(body.data.conversations[0]!.warnings).toEqual(expectedBad);

    // Once the writer finishes the line, the tail warning goes away and the message arrives.
    fs.appendFileSync(file, 'tten","timestamp":1790928005000}}\n');
    const synced = json('sync', '--since', '2026-10-01');
    expect(synced.body.data).toMatchObject({ messages: 1 });
    const after = json('report', '--conversation', BAD).body.data.conversations[0]!;
    expect(after.warnings.map((w) => w.code)).not.toContain('incomplete_tail');
    expect(after.warnings.find((w) => w.code === 'invalid_json')!.count).toBe(2);
  });

  it('lists no warnings for a clean conversation', () => {
    const { json } = setup();
    json('import', '--since', '2026-10-01');
    // No warnings; the privacy sections (#12) may still name the session (its workspace is unknown).
    expect(json('report', '--conversation', CLEAN).body.data).toMatchObject({ conversations: [], totals: {}, excluded: [], forgotten: 0 });
    expect(json('report', '--conversation', `minimaxcode-${CLEAN}`).body.data.conversations).toEqual([]);
  });

  it('filters by code and by date', () => {
    const { json } = setup();
    json('import', '--since', '2026-10-01');
    const byCode = json('report', '--code', 'invalid_record').body.data;
    expect(byCode.totals).toEqual({ invalid_record: 1 });
    expect(byCode.conversations.map((c) => c.sessionId)).toEqual([BAD]);
    expect(json('report', '--since', '2026-10-03').body.data.conversations.filter((c) => c.sessionId)).toEqual([]);
  });

  it('rejects an unknown code as invalid_args with the list of codes', () => {
    const { run } = setup();
    const r = run('report', '--code', 'nope', '--json');
    expect(r.status).toBe(2);
    const body = JSON.parse(r.stdout) as { ok: boolean; error: { type: string; hint: string } };
    expect(body.ok).toBe(false);
    expect(body.error.type).toBe('invalid_args');
    expect(body.error.hint).toContain('invalid_json');
  });

  it('ends import and sync with a one-line warning summary that points to everme report', () => {
    const { run } = setup();
    const r = run('import', '--since', '2026-10-01');
    expect(r.status).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.startsWith('warnings:'))!;
    expect(line).toBe(
      'warnings: invalid_manifest 1, invalid_json 2, invalid_record 1, incomplete_tail 1, tool_call_missing_id 1, unmatched_tool_result 1 (see `everme report`)',
    );
  });
});
