/**
 * What is everme's in the data dir is decided by what the files hold, not by where they are or what
 * sits beside them: the built CLI, spawned with a HOME of its own, installs over and uninstalls from
 * data dirs where the user (or Finder, an editor, EverMe's own installer) put things at or near the
 * paths install writes, and leaves every byte of those alone.
 */
import { chmodSync, existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, repoRoot } from './support/cli.js';
import { asRoot, chownTree, runCliAsNobody } from './support/as-nobody.js';
import { traversable } from './support/traversable.js';
import { cliEnv, envelopeOf, runCli, type CliResult } from './support/cli-process.js';
import { filesContaining, tempDir } from './install-helpers.js';

beforeAll(() => ensureBuilt());

const FIXTURE_MCP = path.join(repoRoot, 'fixtures', 'minimax', 'mcp.json');

/** A data dir of its own under a HOME of its own. */
function home(): { home: string; data: string } {
  const dir = tempDir('everme-own-');
  const data = path.join(dir, '.minimax');
  mkdirSync(path.join(data, 'v2', 'sessions'), { recursive: true });
  return { home: dir, data };
}

function everme(where: { home: string; data: string }, ...args: string[]): Promise<CliResult> {
  return runCli([...args, '--data-dir', where.data], cliEnv(where.home));
}

const plugin = (data: string): string => path.join(data, 'plugins', 'everme-memory');

describe('the everme-memory plugin directory', () => {
  it('is everme\'s by what its two files hold: a stray .DS_Store or hooks.json.bak neither blocks install nor keeps uninstall from taking our hooks out', async () => {
    const at = home();
    expect((await everme(at, 'install')).code).toBe(0);
    writeFileSync(path.join(plugin(at.data), '.DS_Store'), 'Bud1');
    writeFileSync(path.join(plugin(at.data), 'hooks', 'hooks.json.bak'), '{"hooks":{}}\n');

    const again = await everme(at, 'install', '--json');
    expect(again.code, again.stderr).toBe(0);
    const uninstall = await everme(at, 'uninstall');
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(uninstall.stdout).toMatch(/removed\s+plugin\s+\S+everme-memory\s+\(everme's files removed; the directory stays: it still holds \.DS_Store, hooks\/hooks\.json\.bak, which everme did not write\)/);
    expect(existsSync(path.join(plugin(at.data), '.claude-plugin'))).toBe(false);
    expect(existsSync(path.join(plugin(at.data), 'hooks', 'hooks.json'))).toBe(false);
    expect(readFileSync(path.join(plugin(at.data), '.DS_Store'), 'utf8')).toBe('Bud1');
    // No hook of ours is left to run a runtime that is gone.
    expect(existsSync(path.join(at.data, 'everme', 'runtime'))).toBe(false);
    expect(filesContaining(at.data, 'everme/runtime')).toEqual([]);

    // The directory uninstall left (the user's .DS_Store in it) is no obstacle to installing again.
    const reinstall = await everme(at, 'install');
    expect(reinstall.code, reinstall.stderr).toBe(0);
    expect(reinstall.stdout).toMatch(/created\s+plugin/);
  });

  it('is someone else\'s when one of its two files is: another plugin\'s manifest, or a hooks.json with commands not everme\'s', async () => {
    for (const [rel, text] of [
      ['.claude-plugin/plugin.json', '{"name":"my-plugin"}\n'],
      ['hooks/hooks.json', '{"hooks":{"Stop":[{"matcher":"*","hooks":[{"type":"command","command":"/opt/mine/on-stop"}]}]}}\n'],
    ] as const) {
      const at = home();
      mkdirSync(path.dirname(path.join(plugin(at.data), rel)), { recursive: true });
      writeFileSync(path.join(plugin(at.data), rel), text);
      const install = await everme(at, 'install');
      expect(install.code, rel).toBe(1);
      expect(install.stderr).toContain(`is not everme's: ${rel}`);
      expect(readFileSync(path.join(plugin(at.data), rel), 'utf8')).toBe(text);
      const uninstall = await everme(at, 'uninstall');
      expect(uninstall.code, uninstall.stderr).toBe(0);
      expect(readFileSync(path.join(plugin(at.data), rel), 'utf8')).toBe(text);
    }
  });
});

describe('a server of the user\'s named everme-memory in mcp.json', () => {
  it('is never merged into nor removed: install ends in mcp_server_conflict naming the file and the server, uninstall leaves it byte for byte', async () => {
    const at = home();
    const mcp = path.join(at.data, 'mcp.json');
    const theirs = `${JSON.stringify({
      mcpServers: {
        'repo-notes': { command: 'node', args: ['/home/demo/tools/notes-mcp.js'] },
        'everme-memory': { url: 'https://mcp.everme.example/mcp', headers: { Authorization: 'Bearer evt_a1b2c3d4e5f6g7h8' } },
      },
    }, null, 2)}\n`;
    writeFileSync(mcp, theirs);

    const install = await everme(at, 'install', '--json');
    expect(install.code).toBe(1);
    const envelope = envelopeOf(install);
    expect(envelope.error).toMatchObject({ type: 'conflict', code: 'mcp_server_conflict' });
    expect(envelope.error?.message).toContain(`${mcp} was left untouched: its "everme-memory" server is not everme's (it points at https://mcp.everme.example/mcp)`);
    expect(envelope.error?.hint).toContain('never overwritten');
    expect(readFileSync(mcp, 'utf8')).toBe(theirs);
    expect(existsSync(`${mcp}.everme-backup`)).toBe(false);
    // The other steps ran.
    expect(existsSync(path.join(at.data, 'hooks', 'everme-pre-tool-use.md'))).toBe(true);
    expect(existsSync(path.join(plugin(at.data), 'hooks', 'hooks.json'))).toBe(true);

    const uninstall = await everme(at, 'uninstall');
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(uninstall.stdout).toMatch(/kept\s+mcp\s+\S+mcp\.json\s+\(its "everme-memory" server is not everme's \(it points at https:\/\/mcp\.everme\.example\/mcp\): left as it is\)/);
    expect(readFileSync(mcp, 'utf8')).toBe(theirs);
  });
});

describe('a markdown hook of someone else\'s at <data>/hooks/everme-post-tool-use.md', () => {
  it('is neither overwritten nor removed: install ends in hook_file_conflict naming the file, uninstall removes only the hook file that is everme\'s', async () => {
    const at = home();
    const theirs = path.join(at.data, 'hooks', 'everme-post-tool-use.md');
    const text = [
      '---',
      'name: everme-post-tool-use',
      'description: EverMe capture (installed by another tool)',
      'hooks:',
      '  PostToolUse:',
      '    - matcher: "*"',
      '      hooks:',
      '        - type: command',
      '          command: "/opt/evercli/bin/everme-hook post"',
      '          timeout: 5',
      '---',
      'Mine.',
      '',
    ].join('\n');
    mkdirSync(path.dirname(theirs), { recursive: true });
    writeFileSync(theirs, text);

    const install = await everme(at, 'install', '--json');
    expect(install.code).toBe(1);
    const envelope = envelopeOf(install);
    expect(envelope.error).toMatchObject({ type: 'conflict', code: 'hook_file_conflict' });
    expect(envelope.error?.message).toContain(`${theirs} was left untouched: it holds a hook everme did not write (it runs /opt/evercli/bin/everme-hook post)`);
    expect(readFileSync(theirs, 'utf8')).toBe(text);
    expect(existsSync(path.join(at.data, 'hooks', 'everme-pre-tool-use.md'))).toBe(true);

    const uninstall = await everme(at, 'uninstall');
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(uninstall.stdout).toMatch(/kept\s+hook\s+\S+everme-post-tool-use\.md\s+\(PostToolUse hook: it holds a hook everme did not write/);
    expect(readFileSync(theirs, 'utf8')).toBe(text);
    expect(existsSync(path.join(at.data, 'hooks', 'everme-pre-tool-use.md'))).toBe(false);
  });
});

describe('uninstall --purge of an everme.env install created', () => {
  const KEY = 'evt_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
  /** What `evercli plugin install minimaxcode` appends to the everme.env it finds (everme-gateway.md). */
  const EVERME_LINES = 'EVERME_API_BASE=https://api.everme.evermind.ai\nEVERME_AGENT_ID=agt_77\nEVERME_AGENT_TOKEN=evt_0f1e2d3c4b5a69788796a5b4c3d2e1f0\n';

  it('takes out only the header and the key install wrote, keeping the agent token EverMe\'s installer added since', async () => {
    const at = home();
    const env = path.join(at.data, 'everme.env');
    expect((await everme(at, 'install', '--api-key', KEY)).code).toBe(0);
    writeFileSync(env, `${readFileSync(env, 'utf8')}${EVERME_LINES}`);
    expect((await everme(at, 'install')).code).toBe(0);

    const purge = await everme(at, 'uninstall', '--purge');
    expect(purge.code, purge.stderr).toBe(0);
    expect(readFileSync(env, 'utf8')).toBe(EVERME_LINES);
    expect(statSync(env).mode & 0o777).toBe(0o600);
    expect(purge.stdout).toMatch(/kept\s+env\s+\S+everme\.env\s+\(holds EVERME_API_BASE, EVERME_AGENT_ID, EVERME_AGENT_TOKEN that install did not write, so kept: removed only what install wrote \(the everme header, EVERME_API_KEY\)\)/);
    expect(purge.stdout).not.toContain(KEY);
  });

  it('takes out the key an older install wrote without recording it, also after an upgrade install, and keeps EverMe\'s installer\'s lines and the user\'s', async () => {
    const at = home();
    const env = path.join(at.data, 'everme.env');
    const record = path.join(at.data, 'everme', 'install.json');
    expect((await everme(at, 'install', '--api-key', KEY)).code).toBe(0);
    // As an earlier release left it: the file install created, but no key of it listed.
    const legacy = JSON.parse(readFileSync(record, 'utf8')) as { envKeysAdded?: string[] };
    delete legacy.envKeysAdded;
    writeFileSync(record, `${JSON.stringify(legacy, null, 2)}\n`);
    // EverMe's installer appends its lines, and the user a line of their own.
    const mine = 'HTTPS_PROXY=http://proxy.internal:3128\n';
    writeFileSync(env, `${readFileSync(env, 'utf8')}${EVERME_LINES}${mine}`);
    // The upgrade: install again with this build, no --api-key (so it sets no key itself).
    expect((await everme(at, 'install')).code).toBe(0);

    const purge = await everme(at, 'uninstall', '--purge');
    expect(purge.code, purge.stderr).toBe(0);
    expect(readFileSync(env, 'utf8')).toBe(`${EVERME_LINES}${mine}`);
    expect(purge.stdout).not.toContain(KEY);
  });

  it('deletes the file when nothing but what install wrote is in it', async () => {
    const at = home();
    expect((await everme(at, 'install', '--api-key', KEY)).code).toBe(0);
    expect((await everme(at, 'uninstall', '--purge')).code).toBe(0);
    expect(existsSync(path.join(at.data, 'everme.env'))).toBe(false);
  });
});

describe('uninstall over files install never wrote to', () => {
  it('leaves an mcp.json install skipped as invalid and exits 0; one install wrote to and that broke since ends in mcp_config_invalid, said once', async () => {
    const at = home();
    const mcp = path.join(at.data, 'mcp.json');
    const broken = '{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n';
    writeFileSync(mcp, broken);
    expect((await everme(at, 'install')).code).toBe(1);
    const uninstall = await everme(at, 'uninstall');
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(uninstall.stdout).toMatch(/kept\s+mcp\s+\S+mcp\.json\s+\(not valid JSON .*; install never wrote to it, so it is left as it is\)/);
    expect(uninstall.stderr).toBe('');
    expect(readFileSync(mcp, 'utf8')).toBe(broken);

    // Written by install (its backup is recorded), then broken by hand: the entry is stuck in it.
    const wrote = home();
    writeFileSync(path.join(wrote.data, 'mcp.json'), '{"mcpServers": {}}\n');
    expect((await everme(wrote, 'install')).code).toBe(0);
    writeFileSync(path.join(wrote.data, 'mcp.json'), broken);
    const stuck = await everme(wrote, 'uninstall');
    expect(stuck.code).toBe(1);
    expect(stuck.stderr).toMatch(/error: .*mcp\.json was left untouched/);
    expect(stuck.stderr.split('was left untouched')).toHaveLength(2);
  });

  it('leaves an everme.env it cannot read, holding nothing of everme\'s, and exits 0', async () => {
    const at = home();
    const env = path.join(at.data, 'everme.env');
    writeFileSync(env, 'EVERME_AGENT_TOKEN=evt_0f1e2d3c4b5a69788796a5b4c3d2e1f0\n', { mode: 0o600 });
    let opened: Array<[string, number]> = [];
    if (asRoot) {
      // Someone else's file (root's, 0600) in a data dir the user owns.
      chownTree(at.home);
      lchownSync(env, 0, 0);
      opened = traversable([at.home, path.join(repoRoot, 'dist'), realpathSync(path.join(repoRoot, 'node_modules'))]);
    } else {
      chmodSync(env, 0);
    }
    try {
      const uninstall = await runCliAsNobody(['uninstall', '--data-dir', at.data], cliEnv(at.home));
      expect(uninstall.code, uninstall.stderr).toBe(0);
      expect(uninstall.stdout).toMatch(/kept\s+env\s+\S+everme\.env\s+\(not created by `everme install` and it wrote nothing there; unreadable \(EACCES\), left as it is\)/);
    } finally {
      for (const [dir, mode] of opened.reverse()) chmodSync(dir, mode);
      chmodSync(env, 0o600);
    }
    expect(readFileSync(env, 'utf8')).toBe('EVERME_AGENT_TOKEN=evt_0f1e2d3c4b5a69788796a5b4c3d2e1f0\n');
  });
});

describe('mcp.json and everme.env kept as symlinks (a dotfiles repository)', () => {
  const KEY = 'evt_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
  const EVERME_ENV = '# EverMe\nEVERME_API_BASE=https://api.everme.evermind.ai\nEVERME_AGENT_ID=agt_1\nEVERME_AGENT_TOKEN=evt_0f1e2d3c4b5a69788796a5b4c3d2e1f0\n';

  function dotfiles(at: { home: string; data: string }): { mcp: string; env: string } {
    const dir = path.join(at.home, 'dotfiles');
    mkdirSync(dir);
    const files = { mcp: path.join(dir, 'mcp.json'), env: path.join(dir, 'everme.env') };
    writeFileSync(files.mcp, readFileSync(FIXTURE_MCP));
    writeFileSync(files.env, EVERME_ENV, { mode: 0o600 });
    symlinkSync(files.mcp, path.join(at.data, 'mcp.json'));
    symlinkSync(files.env, path.join(at.data, 'everme.env'));
    return files;
  }

  it('are written through: install and uninstall --purge change the files they point to, and the links stay links', async () => {
    const at = home();
    const files = dotfiles(at);
    const install = await everme(at, 'install', '--api-key', KEY);
    expect(install.code, install.stderr).toBe(0);
    for (const name of ['mcp.json', 'everme.env']) expect(lstatSync(path.join(at.data, name)).isSymbolicLink(), name).toBe(true);
    expect(readFileSync(files.mcp, 'utf8')).toContain('"everme-memory"');
    expect(readFileSync(files.env, 'utf8')).toBe(`${EVERME_ENV}EVERME_API_KEY=${KEY}\n`);

    const purge = await everme(at, 'uninstall', '--purge');
    expect(purge.code, purge.stderr).toBe(0);
    for (const name of ['mcp.json', 'everme.env']) expect(lstatSync(path.join(at.data, name)).isSymbolicLink(), name).toBe(true);
    expect(readFileSync(files.mcp).equals(readFileSync(FIXTURE_MCP))).toBe(true);
    expect(readFileSync(files.env, 'utf8')).toBe(EVERME_ENV);
  });

  it('an install that fails after writing through them puts the files they point to back', async () => {
    const at = home();
    const files = dotfiles(at);
    // A directory where the install record goes: the last step fails, after mcp.json and everme.env were written.
    mkdirSync(path.join(at.data, 'everme', 'install.json'), { recursive: true });
    const install = await everme(at, 'install', '--api-key', KEY);
    expect(install.code, install.stderr).toBe(5);
    expect(lstatSync(path.join(at.data, 'mcp.json')).isSymbolicLink()).toBe(true);
    expect(readFileSync(files.mcp).equals(readFileSync(FIXTURE_MCP))).toBe(true);
    expect(readFileSync(files.env, 'utf8')).toBe(EVERME_ENV);
  });

  it('a link to nothing is refused before anything is written, naming it', async () => {
    const at = home();
    const mcp = path.join(at.data, 'mcp.json');
    symlinkSync(path.join(at.home, 'dotfiles', 'mcp.json'), mcp);
    const install = await everme(at, 'install', '--json');
    expect(install.code).toBe(5);
    const envelope = envelopeOf(install);
    expect(envelope.error).toMatchObject({ type: 'io', code: 'dangling_symlink' });
    expect(envelope.error?.message).toBe(`${mcp} is a symbolic link to ${path.join(at.home, 'dotfiles', 'mcp.json')}, which does not exist`);
    expect(readdirSync(at.data).sort()).toEqual(['mcp.json', 'v2']);
    expect(lstatSync(mcp).isSymbolicLink()).toBe(true);
    // Found before any step, so a dry run says so too rather than plan a write it could not make.
    expect((await everme(at, 'install', '--dry-run')).code).toBe(5);
  });
});

describe('EVERME_STATE_DIR set under a file', () => {
  it('stops install (and its dry run) and uninstall --purge with io state_dir_not_a_directory before anything is written; a plain uninstall still takes the hooks out', async () => {
    const at = home();
    expect((await everme(at, 'install')).code).toBe(0);
    const blocker = path.join(at.home, 'statefile');
    writeFileSync(blocker, '');
    const env = cliEnv(at.home, { EVERME_STATE_DIR: path.join(blocker, 'sub') });
    const before = readFileSync(path.join(plugin(at.data), 'hooks', 'hooks.json'), 'utf8');

    for (const args of [['install', '--dry-run'], ['install'], ['uninstall', '--purge'], ['uninstall', '--purge', '--dry-run']]) {
      const r = await runCli([...args, '--data-dir', at.data, '--json'], env);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(5);
      const error = envelopeOf(r).error;
      expect(error?.type).toBe('io');
      expect(error?.code).toBe('state_dir_not_a_directory');
      expect(error?.message).toContain(blocker);
    }
    // Nothing was written or removed by the refused runs.
    expect(readFileSync(path.join(plugin(at.data), 'hooks', 'hooks.json'), 'utf8')).toBe(before);

    // Without --purge the store is not touched, so the setting does not stand in the way.
    const plain = await runCli(['uninstall', '--data-dir', at.data], env);
    expect(plain.code, plain.stderr).toBe(0);
    expect(existsSync(path.join(plugin(at.data), 'hooks', 'hooks.json'))).toBe(false);
  });
});

describe('--api-key over the agent token EverMe\'s installer wrote', () => {
  const KEY = 'emk_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
  const EVERME_ENV = '# EverMe\nEVERME_API_BASE=https://api.everme.evermind.ai\nEVERME_AGENT_ID=agt_1\nEVERME_AGENT_TOKEN=evt_0f1e2d3c4b5a69788796a5b4c3d2e1f0\n';

  it('says the key given is written but NOT the one in use, and what to do, in text and --json', async () => {
    const at = home();
    writeFileSync(path.join(at.data, 'everme.env'), EVERME_ENV, { mode: 0o600 });
    const text = await everme(at, 'install', '--api-key', KEY);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('The API key you gave is written to everme.env but NOT used: EVERME_AGENT_TOKEN in everme.env comes first.');
    expect(text.stdout).toContain('remove the EVERME_AGENT_TOKEN and EVERME_AGENT_ID lines from everme.env');
    expect(text.stdout + text.stderr).not.toContain(KEY);

    const json = await everme(at, 'install', '--json', '--api-key', KEY);
    expect(json.code, json.stderr).toBe(0);
    const data = envelopeOf(json).data as { apiKey: string; apiKeyNotUsed?: unknown };
    expect(data.apiKey).toBe('kept');
    expect(data.apiKeyNotUsed).toEqual({ inUse: 'EVERME_AGENT_TOKEN', source: 'everme.env' });
  });

  it('says nothing of the kind when the key given is the one in use', async () => {
    const at = home();
    const json = await everme(at, 'install', '--json', '--api-key', KEY);
    expect(json.code, json.stderr).toBe(0);
    const data = envelopeOf(json).data as { apiKey: string; apiKeyNotUsed?: unknown };
    expect(data.apiKey).toBe('set');
    expect(data.apiKeyNotUsed).toBeUndefined();
  });
});

describe('uninstall --purge gives back an everme.env install appended to byte for byte', () => {
  const KEY = 'emk_a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
  const BASE = '# EverMe\nEVERME_API_BASE=https://api.everme.evermind.ai';

  it('with or without a final newline, LF or CRLF, also after an uninstall without --purge', async () => {
    for (const before of [BASE, `${BASE}\n`, BASE.replace(/\n/g, '\r\n'), `${BASE.replace(/\n/g, '\r\n')}\r\n`]) {
      for (const keepFirst of [false, true]) {
        const at = home();
        const env = path.join(at.data, 'everme.env');
        writeFileSync(env, before, { mode: 0o600 });
        const install = await everme(at, 'install', '--api-key', KEY);
        expect(install.code, install.stderr).toBe(0);
        expect(readFileSync(env, 'utf8')).toContain(`EVERME_API_KEY=${KEY}`);
        // Without --purge the key stays (and the record remembers it), then --purge takes it out.
        if (keepFirst) expect((await everme(at, 'uninstall')).code).toBe(0);
        const purge = await everme(at, 'uninstall', '--purge');
        expect(purge.code, purge.stderr).toBe(0);
        expect(JSON.stringify(readFileSync(env, 'utf8')), `${JSON.stringify(before)} keepFirst=${keepFirst}`).toBe(JSON.stringify(before));
      }
    }
  }, 240_000);
});
