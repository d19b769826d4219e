import { statSync } from 'node:fs';
import path from 'node:path';
import { loadSettings } from '../src/config/settings.js';
import { databasePath } from '../src/store/database.js';
import { exportMemory, JSONL_FILE } from '../src/export/export-memory.js';
import { importExport } from '../src/export/import-export.js';

/**
 * One export (jsonl or markdown) of a built store, or one `import --from-export` into a fresh store,
 * in this process: its time and peak RSS as one JSON line. Memory must not grow with the store:
 * compare the RSS with the store's size and with the import that built it.
 */
async function main(kind: 'jsonl' | 'markdown' | 'reimport', dataDir: string, stateDir: string, outDir: string): Promise<void> {
  const settings = { ...loadSettings(dataDir, {}, { EVERME_STATE_DIR: stateDir }), apiKey: undefined };
  const started = performance.now();
  let result: Record<string, unknown>;
  if (kind === 'reimport') {
    const loaded = await importExport(settings, path.join(outDir, JSONL_FILE));
    result = { conversations: loaded.conversations, messages: loaded.messages };
  } else {
    const summary = await exportMemory(settings, { format: kind, filter: {}, out: outDir });
    result = { conversations: summary.conversations, messages: summary.messages, bytes: summary.bytes };
  }
  process.stdout.write(
    `${JSON.stringify({
      ms: performance.now() - started,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      storeMb: statSync(databasePath(stateDir)).size / 1024 / 1024,
      ...result,
    })}\n`,
  );
}

void main(process.argv[2] as 'jsonl' | 'markdown' | 'reimport', process.argv[3]!, process.argv[4]!, process.argv[5]!);
