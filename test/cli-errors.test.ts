import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEntry, ensureBuilt, repoRoot } from './support/cli.js';
import { hermeticEnv } from './support/hermetic-env.js';
import { tempDir } from './support/temp.js';

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [cliEntry, ...args], {
    env: hermeticEnv(tempDir('everme-home-'), env),
    encoding: 'utf8',
  });
}

describe('bad input gets a clear answer', () => {
  beforeAll(() => ensureBuilt());

  it.each([
    [['import', '--since', '2026-01-01', '--bogus'], /Nonexistent flag: --bogus/],
    [['import'], /Missing required flag since/],
    [['import', '--since', '2026-02-30'], /--since must be a date like/],
    [['import', '--since', 'yesterday'], /--since must be a date like/],
    [['import', '--since', '2026-01-01', '--concurrency', '0'], /^--concurrency must be an integer greater than or equal to 1, got "0"$/],
    [['import', '--since', '2026-01-01', '--sink', 'cloud'], /--sink/],
    [['sync', '--since', '01/02/2026'], /--since must be a date like/],
    // oclif's parser throws these without its parse context: still a usage mistake, never internal.
    [['sync', '--sink', 'local', '--sink', 'local'], /^Flag --sink can only be specified once$/],
    [['import', '--since', '2026-01-01', '--since', '2026-01-02'], /^Flag --since can only be specified once$/],
    [['search', 'widget', '--limit'], /^Flag --limit expects a value$/],
    [['sync', '--sink'], /^Flag --sink expects/],
    // oclif's two-line list, as one line: no doubled colon, no column padding.
    [['search'], /^Missing 1 required arg: query what to look for$/],
    // A word the command takes no argument for: oclif looks for a command `sync:extra` first.
    [['sync', 'extra'], /^Unexpected argument: extra$/],
    [['status', 'extra'], /^Unexpected argument: extra$/],
    [['install', '--api-key', '', '--dry-run'], /^--api-key is empty$/],
    // A blank value names nothing: read, it was an id no conversation has (and forget tombstoned
    // it) or the current directory.
    [['forget', '--conversation', '', '--yes'], /^--conversation is empty$/],
    [['forget', '--session', ' ', '--yes'], /^--session is empty$/],
    [['forget', '--project', '', '--yes'], /^--project is empty$/],
    [['search', 'widget', '--project', ''], /^--project is empty$/],
    [['export', '--conversation', ''], /^--conversation is empty$/],
    [['export', '--project', ''], /^--project is empty$/],
    [['report', '--conversation', ''], /^--conversation is empty$/],
    [['import', '--from-export', ''], /^--from-export is empty$/],
    [['show', ''], /^The session id is empty$/],
    // sync's own fast parser hands a blank --session to oclif, which refuses it as the others.
    [['sync', '--session', ''], /^--session is empty$/],
    [['mcp', '--project', ' '], /^--project is empty$/],
    // Stored masked, two token-named directories are one path: forgetting by it would take both.
    [['forget', '--project', '/home/u/ghp_abcdefghijklmnopqrstuvwxyz0123456789', '--yes'], /^--project \/home\/u\/\[REDACTED:github-token\] holds a credential in its path/],
    // ... and so does the masked form everme itself prints, copied back.
    [['forget', '--project', '/home/u/[REDACTED:github-token]', '--yes'], /^--project \/home\/u\/\[REDACTED:github-token\] holds a credential in its path/],
    [['install', '--api-base', 'ftp://x', '--dry-run'], /^--api-base must be an http\(s\) URL$/],
    // A blank data dir names no directory: read as absent, the command ran on the default one.
    ...[
      ['status'],
      ['import', '--since', '2026-01-01'],
      ['sync'],
      ['search', 'widget'],
      ['get', 'm1'],
      ['show', 'mvs_1'],
      ['report'],
      ['export'],
      ['forget', '--project', '/p', '--yes'],
      ['install', '--dry-run'],
      ['uninstall', '--dry-run'],
      ['mcp'],
      ['ui', '--no-open'],
    ].flatMap((command): Array<[string[], RegExp]> => [
      [[...command, '--data-dir', ''], /^--data-dir is empty$/],
      [[...command, '--data-dir', ' '], /^--data-dir is empty$/],
    ]),
  ])('%j is invalid_args, exit 2, one envelope and no stack trace', (args, message) => {
    const r = run([...args, '--json']);
    expect(r.status).toBe(2);
    const body = JSON.parse(r.stdout) as { ok: boolean; error: { type: string; message: string; hint?: string } };
    expect(body.ok).toBe(false);
    expect(body.error.type).toBe('invalid_args');
    expect(body.error.message).toMatch(message);
    expect(body.error.hint).toBeTruthy();
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it.each([
    [['--json'], 'missing_command', /^No command given, only --json$/],
    [['--json', 'nosuch'], 'unknown_command', /^Unknown command: nosuch$/],
    [['--json', 'sync'], 'flag_before_command', /^--json goes after the command$/],
    // The word after --data-dir is its value, not a command.
    [['--json', '--data-dir', '/tmp/somewhere'], 'missing_command', /^No command given, only --json$/],
    [['--data-dir', '/tmp/somewhere', '--json'], 'missing_command', /^No command given, only --data-dir$/],
    [['--data-dir', '/tmp/somewhere', '--json', 'nosuch'], 'unknown_command', /^Unknown command: nosuch$/],
    [['--data-dir', '/tmp/somewhere', 'sync', '--json'], 'flag_before_command', /^--data-dir goes after the command$/],
  ])('%j, a flag where the command belongs, is one invalid_args envelope (exit 2)', (args, code, message) => {
    const r = run(args);
    expect(r.status).toBe(2);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    const body = JSON.parse(r.stdout) as { ok: boolean; error: { type: string; code: string; message: string; hint?: string } };
    expect(body.error).toMatchObject({ type: 'invalid_args', code });
    expect(body.error.message).toMatch(message);
    expect(body.error.hint).toBeTruthy();
  });

  it('takes `everme --data-dir D` for a missing command, not for a command named D', () => {
    const r = run(['--data-dir', '/tmp/somewhere']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: No command given, only --data-dir\nhint: Name a command and put the flags after it\. Commands: /);
  });

  it.each([
    [['get', 'm1', '--offset', '-1'], '--offset must be an integer greater than or equal to 0, got "-1"'],
    [['get', 'm1', '--offset', 'abc'], '--offset must be an integer, got "abc"'],
    [['ui', '--no-open', '--port', '70000'], '--port must be an integer less than or equal to 65535, got "70000"'],
    [['import', '--since', '2026-01-01', '--concurrency', '0'], '--concurrency must be an integer greater than or equal to 1, got "0"'],
  ])('%j, a bad number, is said in its own words without oclif’s "Parsing --flag" prefix (invalid_args, exit 2, a hint)', (args, message) => {
    const r = run(args);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`error: ${message}\nhint: See \`everme ${args[0]} --help\`.\n`);
    const json = run([...args, '--json']);
    expect(json.status).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({ ok: false, error: { type: 'invalid_args', code: 'invalid_args', message, hint: `See \`everme ${args[0]} --help\`.` } });
  });

  it('masks a credential typed where a value was expected, and drops terminal controls, in the error of either mode', () => {
    const data = tempDir('everme-data-');
    const anthropic = `sk-ant-api03-${'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789'.repeat(2)}abcdefghijklmnopqrstuv-AAAAAAAA`;
    const github = 'ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789';
    const controls = ['\x1b[2J', '\x1b]0;pwned\x07', '\u009b31m'];
    const cases: Array<[string[], string | undefined, string]> = [
      [['show', anthropic], anthropic, 'No session [REDACTED:anthropic-key] under'],
      [['import', '--since', github], github, 'got "[REDACTED:github-token]"'],
      [['ui', '--port', github], github, 'got "[REDACTED:github-token]"'],
      [['show', `ab${controls.join('')}cd`], undefined, 'No session abcd under'],
    ];
    for (const [args, secret, shown] of cases) {
      for (const mode of [[], ['--json']]) {
        const r = run([...args, '--data-dir', data, ...mode]);
        expect(r.status, r.stderr).not.toBe(0);
        const printed = r.stdout + r.stderr;
        if (secret !== undefined) expect(printed, args.join(' ')).not.toContain(secret.slice(4, 20));
        for (const control of controls) expect(printed).not.toContain(control);
        const message = mode.length === 0 ? r.stderr : (JSON.parse(r.stdout) as { error: { message: string } }).error.message;
        expect(message).toContain(shown);
        // Parsed back, the envelope's message holds no control either (JSON would carry it escaped).
        expect(message).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
      }
    }
  });

  it('prints error: and hint: on stderr and nothing on stdout in text mode', () => {
    const r = run(['import', '--since', 'nope']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: --since must be a date like 2026-09-01, got "nope"\nhint: /);
  });

  it('answers an EVERME_STATE_DIR that is a file, or lies under one, the same way in every command', () => {
    const dataDir = tempDir('everme-data-');
    fs.mkdirSync(path.join(dataDir, 'v2', 'sessions'), { recursive: true });
    const file = path.join(tempDir('everme-state-'), 'a-file');
    fs.writeFileSync(file, 'x');
    const commands = [
      ['sync'],
      ['import', '--since', '2026-01-01'],
      ['report'],
      ['search', 'widget'],
      ['get', 'minimaxcode-mvs_00000000000000000000000000000001'],
      ['export', '--out', tempDir('everme-out-')],
      ['forget', '--project', '/p', '--yes'],
      ['status'],
    ];
    for (const stateDir of [file, path.join(file, 'sub')]) {
      for (const args of commands) {
        const r = run([...args, '--data-dir', dataDir, '--json'], { EVERME_STATE_DIR: stateDir });
        const where = `${args[0]!} with EVERME_STATE_DIR=${stateDir}`;
        expect(r.status, where).toBe(5);
        const body = JSON.parse(r.stdout) as { ok: boolean; error: { type: string; code: string; message: string; hint?: string } };
        expect(body.error, where).toMatchObject({ type: 'io', code: 'state_dir_not_a_directory' });
        expect(body.error.message, where).toContain(file);
        expect(body.error.hint, where).toMatch(/EVERME_STATE_DIR/);
      }
    }
  });

  it('answers an export --out that is a file, or lies under one, with an io error naming the file and a hint', () => {
    const dataDir = tempDir('everme-data-');
    fs.mkdirSync(path.join(dataDir, 'v2', 'sessions'), { recursive: true });
    const file = path.join(tempDir('everme-out-'), 'a-file');
    fs.writeFileSync(file, 'x');
    for (const out of [file, path.join(file, 'sub')]) {
      const r = run(['export', '--out', out, '--data-dir', dataDir, '--json']);
      expect(r.status, out).toBe(5);
      const body = JSON.parse(r.stdout) as { error: { type: string; code: string; message: string; hint?: string } };
      expect(body.error, out).toMatchObject({ type: 'io', code: 'out_not_a_directory' });
      expect(body.error.message, out).toContain(file);
      expect(body.error.hint, out).toMatch(/--out DIR/);
    }
  });

  it('names the missing data dir in an io error (exit 5)', () => {
    const missing = path.join(os.tmpdir(), 'everme-no-such-dir', 'minimax');
    const r = run(['import', '--since', '2026-01-01', '--json'], { MINIMAX_DATA_DIR: missing });
    expect(r.status).toBe(5);
    const body = JSON.parse(r.stdout) as { ok: boolean; error: { type: string; message: string; detail: { path: string } } };
    expect(body.error.type).toBe('io');
    expect(body.error.message).toContain(missing);
    expect(body.error.detail.path).toBe(missing);
  });

  it('with no variable and no ~/.minimax on Linux, tries the XDG data dir and says so', () => {
    const r = run(['sync']);
    expect(r.status).toBe(5);
    expect(r.stderr).toMatch(/error: MiniMax Code data directory not found: .*\/\.local\/share\/minimax\nhint: /);
  });

  // /dev/full takes the open and refuses every write (ENOSPC), as a file on a full disk does.
  it.runIf(fs.existsSync('/dev/full'))('answers a stdout that cannot be written with one io line on stderr (exit 5), no stack trace', () => {
    const demo = path.join(repoRoot, 'fixtures', 'demo');
    const env = hermeticEnv(tempDir('everme-home-'), { EVERME_STATE_DIR: tempDir('everme-state-') });
    const full = fs.openSync('/dev/full', 'w');
    try {
      // import and search through oclif (text and --json), sync through its own entry; help and the
      // version, which oclif prints before any command starts; status --json, whose "problems found"
      // exit 1 an output that never arrived replaces; export, whose writer meets the failure too.
      const demoDir = ['--data-dir', demo];
      const runs = [
        ['import', '--since', '2026-07-01', ...demoDir],
        ['search', 'widget', ...demoDir],
        ['search', 'widget', '--json', ...demoDir],
        ['sync', '--json', ...demoDir],
        ['--help'],
        ['search', '--help'],
        ['--version'],
        ['status', '--json', ...demoDir],
        ['export', ...demoDir],
      ];
      for (const args of runs) {
        const r = spawnSync(process.execPath, [cliEntry, ...args], { env, encoding: 'utf8', stdio: ['ignore', full, 'pipe'] });
        expect(r.status, args.join(' ')).toBe(5);
        expect(r.stderr).toMatch(/^error: Could not write the output to stdout \(ENOSPC\)\nhint: What the command did .* is kept/m);
        // Said once, and nothing else: no stack, no raw errno line.
        expect(r.stderr.match(/^error: /gm), args.join(' ')).toHaveLength(1);
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
    } finally {
      fs.closeSync(full);
    }
    // The import's work was done before its output failed: a search finds it.
    const found = spawnSync(process.execPath, [cliEntry, 'search', 'widget', '--json', '--data-dir', demo], { env, encoding: 'utf8' });
    expect((JSON.parse(found.stdout) as { data: { results: unknown[] } }).data.results.length).toBeGreaterThan(0);
  });

  // No output was lost when nothing was written there: a write of nothing (a final flush) fails on /dev/full too.
  it.runIf(fs.existsSync('/dev/full'))('is no failure when the command writes nothing to stdout: its own outcome stands, said once', () => {
    const demo = path.join(repoRoot, 'fixtures', 'demo');
    const env = hermeticEnv(tempDir('everme-home-'), { EVERME_STATE_DIR: tempDir('everme-state-') });
    expect(spawnSync(process.execPath, [cliEntry, 'import', '--since', '2026-07-01', '--data-dir', demo], { env, encoding: 'utf8' }).status).toBe(0);
    const full = fs.openSync('/dev/full', 'w');
    try {
      const missing = path.join(tempDir('everme-nodata-'), 'absent');
      const runs: Array<[string[], number, RegExp]> = [
        // No hits: the answer goes to stderr, stdout gets nothing.
        [['search', 'zzqqxx', '--data-dir', demo], 0, /^no memories match "zzqqxx"$/m],
        [['show', '', '--data-dir', demo], 2, /^error: The session id is empty$/m],
        [['status', '--data-dir', missing], 5, /^error: MiniMax Code data directory not found: /m],
        // sync through its own entry.
        [['sync', '--data-dir', missing], 5, /^error: MiniMax Code data directory not found: /m],
      ];
      for (const [args, code, said] of runs) {
        const r = spawnSync(process.execPath, [cliEntry, ...args], { env, encoding: 'utf8', stdio: ['ignore', full, 'pipe'] });
        expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(code);
        expect(r.stderr).toMatch(said);
        expect(r.stderr, args.join(' ')).not.toContain('stdout');
        expect((r.stderr.match(/^error: /gm) ?? []).length, args.join(' ')).toBeLessThanOrEqual(1);
      }
    } finally {
      fs.closeSync(full);
    }
  });
});
