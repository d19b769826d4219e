import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { concurrencyFlag, sinceFlag, sinkFlag, sinkFrom } from '../src/cli/flags.js';
import { createProgress } from '../src/cli/progress.js';
import { renderImportExport } from '../src/cli/render-import-export.js';
import { renderRunSummary } from '../src/cli/render-run.js';
import { finishRun } from '../src/cli/run-output.js';
import { requireDataDir, resolveDataDir } from '../src/config/data-dir.js';
import { loadSettings } from '../src/config/settings.js';
import { EvermeError } from '../src/core/errors.js';
import { runPipeline, type RunSummary } from '../src/engine/run-pipeline.js';
import { importExport, type ImportExportSummary } from '../src/export/import-export.js';

export default class Import extends EvermeCommand {
  static override summary = 'Import MiniMax Code history since a date (the cold start)';
  static override description =
    'Reads every session created on or after --since, converts it to agent memory, and delivers what is not delivered yet. Re-running it is a no-op. With --from-export, loads a jsonl file written by `everme export` into the local store instead.';
  static override examples = [
    '<%= config.bin %> import --since 2026-09-01',
    '<%= config.bin %> import --since 2026-09-01 --sink everme --json',
    '<%= config.bin %> import --from-export everme-export.jsonl',
  ];
  static override flags = {
    since: sinceFlag('first day to import (YYYY-MM-DD, UTC); required unless --from-export'),
    'from-export': Flags.string({ description: 'load a jsonl file written by `everme export` into the local store (once), instead of reading sessions' }),
    sink: sinkFlag('where memories go (default: everme when an API key is configured, else local)'),
    concurrency: concurrencyFlag,
    'dry-run': Flags.boolean({ description: 'read and convert, but touch neither the network nor the state', default: false }),
  };

  async run(): Promise<RunSummary | ImportExportSummary> {
    const { flags } = await this.parse(Import);
    const { since, 'from-export': fromExport } = flags;
    // Flags are checked before the data dir is looked for: a usage mistake is invalid_args wherever it runs.
    if (fromExport !== undefined && (since !== undefined || flags['dry-run'] || flags.sink === 'everme')) {
      throw new EvermeError('invalid_args', '--from-export loads a file into the local store and takes no --since, --dry-run or --sink everme', {
        hint: 'Run `everme import --from-export FILE` on its own.',
      });
    }
    if (fromExport === undefined && since === undefined) {
      throw new EvermeError('invalid_args', 'Missing required flag since (the first day to import), or --from-export FILE', {
        hint: 'Pass --since YYYY-MM-DD (the first day to import), or --from-export FILE.',
      });
    }
    const dataDir = requireDataDir(resolveDataDir(flags['data-dir']));
    const settings = loadSettings(dataDir);
    if (since === undefined) {
      const loaded = await importExport(settings, fromExport!);
      return this.result(loaded, () => renderImportExport(loaded));
    }
    const sink = sinkFrom(flags.sink, settings);
    const progress = createProgress('import', { json: this.jsonMode });
    const summary = await runPipeline({
      mode: 'import',
      settings,
      sink,
      since: since.text,
      sinceMs: since.ms,
      concurrency: flags.concurrency,
      dryRun: flags['dry-run'],
      signal: this.abort.signal,
      onProgress: (p) => progress.update(p),
    }).finally(() => progress.stop());
    return this.result(finishRun(summary, this.jsonMode), () => renderRunSummary(summary));
  }
}
