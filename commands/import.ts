import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { renderImportExport } from '../src/cli/render-import-export.js';
import { parseSinceDate } from '../src/core/dates.js';
import { EvermeError } from '../src/core/errors.js';
import { createProgress } from '../src/cli/progress.js';
import { finishRun } from '../src/cli/run-output.js';
import { requireDataDir, resolveDataDir } from '../src/config/data-dir.js';
import { defaultSink, loadSettings, type SinkName } from '../src/config/settings.js';
import { runPipeline } from '../src/engine/run-pipeline.js';
import { importExport } from '../src/export/import-export.js';

export default class Import extends EvermeCommand {
  static override summary = 'Import MiniMax Code history since a date (the cold start)';
  static override description =
    'Reads every session created on or after --since, converts it to agent memory, and delivers what is not delivered yet. Re-running it is a no-op.';
  static override examples = ['<%= config.bin %> import --since 2026-09-01', '<%= config.bin %> import --since 2026-09-01 --sink everme --json'];
  static override flags = {
    since: Flags.string({ description: 'first day to import (YYYY-MM-DD, UTC); required unless --from-export' }),
    'from-export': Flags.string({ description: 'load a jsonl file written by `everme export` into the local store (once), instead of reading sessions' }),
    sink: Flags.string({ description: 'where memories go (default: everme when an API key is configured, else local)', options: ['local', 'everme'] }),
    concurrency: Flags.integer({ description: 'sessions processed at once (default: 8 for the local store, 4 for the gateway)', min: 1, max: 32 }),
    'dry-run': Flags.boolean({ description: 'read and convert, but touch neither the network nor the state', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Import);
    if (flags['from-export'] !== undefined) {
      if (flags.since !== undefined || flags['dry-run'] || flags.sink === 'everme') {
        throw new EvermeError('invalid_args', '--from-export loads a file into the local store and takes no --since, --dry-run or --sink everme', {
          hint: 'Run `everme import --from-export FILE` on its own.',
        });
      }
      const loaded = await importExport(loadSettings(requireDataDir(resolveDataDir(flags['data-dir']))), flags['from-export']);
      this.emit(loaded, () => renderImportExport(loaded));
      return;
    }
    if (flags.since === undefined) {
      throw new EvermeError('invalid_args', 'Missing required flag since (the first day to import), or --from-export FILE', {
        hint: 'Pass --since YYYY-MM-DD (the first day to import), or --from-export FILE.',
      });
    }
    const sinceMs = parseSinceDate(flags.since);
    const dataDir = requireDataDir(resolveDataDir(flags['data-dir']));
    const settings = loadSettings(dataDir);
    const sink = (flags.sink as SinkName | undefined) ?? defaultSink(settings);
    const progress = createProgress('import', { json: this.jsonMode });
    const summary = await runPipeline({
      mode: 'import',
      settings,
      sink,
      since: flags.since,
      sinceMs,
      concurrency: flags.concurrency,
      dryRun: flags['dry-run'],
      signal: this.abort.signal,
      onProgress: (p) => progress.update(p),
    }).finally(() => progress.stop());
    finishRun(summary, this.jsonMode, (data, render) => this.emit(data, render));
  }
}
