import { statSync } from 'node:fs';
import path from 'node:path';
import { loadSettings } from '../src/config/settings.js';
import { databasePath } from '../src/store/database.js';
import { exportMemory, JSONL_FILE } from '../src/export/export-memory.js';
import { importExport } from '../src/export/import-export.js';
import { Forgetter } from '../src/forget/forget.js';

/**
 * One export (jsonl or markdown) of a built store, or one `import --from-export` into a fresh store,
 * in this process: its time and peak RSS as one JSON line. Memory must not grow with the store:
 * compare the RSS with the store's size and with the import that built it.
 */
async function main(kind: 'jsonl' | 'markdown' | 'reimport' | 'forget', dataDir: string, stateDir: string, outDir: string): Promise<void> {
  const settings = { ...loadSettings(dataDir, {}, { EVERME_STATE_DIR: stateDir }), apiKey: undefined };
  const started = performance.now();
  let result: Record<string, unknown>;
  if (kind === 'forget') {
    // One conversation out of the whole store: the cost is the cleanup (FTS optimize, WAL truncate).
    const forgetter = Forgetter.open(settings);
    try {
      const planned = forgetter.plan({ kind: 'before', ms: Number.MAX_SAFE_INTEGER }).slice(0, 1);
      const done = await forgetter.apply(planned);
      result = { conversations: done.conversations.length, messages: done.removedMessages };
    } finally {
      forgetter.close();
    }
  } else if (kind === 'reimport') {
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

void main(process.argv[2] as 'jsonl' | 'markdown' | 'reimport' | 'forget', process.argv[3]!, process.argv[4]!, process.argv[5]!);
