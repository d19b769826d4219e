/**
 * Writes the demo data dir's session index (`fixtures/demo/v2/sqlite/runtime-state.sqlite`): what
 * MiniMax Code's own index would say of the four demo sessions, so the README's first command shows
 * projects and titles. Run once after changing the demo sessions: `node dist/bench/demo-index.js`.
 * The file is written as a host that quit leaves it (WAL mode, no -wal or -shm), and is committed.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sessionIndexFile, writeSessionIndex, type IndexRecord } from './session-index-file.js';
import { repo } from './repo-root.js';

const demo = path.join(repo, 'fixtures', 'demo');

const WIDGET = '/home/demo/projects/widget';
const TOOLBOX = '/home/demo/projects/toolbox';

export const DEMO_RECORDS: IndexRecord[] = [
  { sessionId: 'mvs_9d2e4c6a8b0f41d3a5c7e9f1b3d5f7a9', workspaceDir: WIDGET, title: 'What src/widget.ts exports', sessionType: 'branch', sessionKind: 'conversation', visibility: 'visible', isDefaultWorkspace: false, createdAtMs: 1784613753910, updatedAtMs: 1784613763910 },
  { sessionId: 'mvs_5a5a5a5a0000411182c3d4e5f6a7b8c9', workspaceDir: WIDGET, title: 'Retry, then clear the conversation', sessionType: 'branch', sessionKind: 'conversation', visibility: 'visible', isDefaultWorkspace: false, createdAtMs: 1785200400001, updatedAtMs: 1785200404001 },
  { sessionId: 'mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40', workspaceDir: TOOLBOX, title: 'Which file is the build script?', sessionType: 'root', sessionKind: 'conversation', visibility: 'visible', isDefaultWorkspace: false, createdAtMs: 1789355112345, updatedAtMs: 1789355173845 },
  { sessionId: 'mvs_0b7e55aa90c24f3e8d1c2b3a4f5e6d70', workspaceDir: TOOLBOX, sessionType: 'root', sessionKind: 'conversation', visibility: 'visible', isDefaultWorkspace: false, createdAtMs: 1789512001007, updatedAtMs: 1789512001007 },
];

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  rmSync(sessionIndexFile(demo), { force: true });
  const file = writeSessionIndex(demo, 'newest', DEMO_RECORDS);
  process.stdout.write(`wrote ${path.relative(repo, file)}\n`);
}
