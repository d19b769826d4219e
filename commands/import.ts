import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { concurrencyFlag, requiredSinceFlag, sinkFlag, sinkFrom } from '../src/cli/flags.js';
import { createProgress } from '../src/cli/progress.js';
import { renderRunSummary } from '../src/cli/render-run.js';
import { finishRun } from '../src/cli/run-output.js';
import { requireDataDir, resolveDataDir } from '../src/config/data-dir.js';
import { loadSettings } from '../src/config/settings.js';
import { runPipeline, type RunSummary } from '../src/engine/run-pipeline.js';

export default class Import extends EvermeCommand {
  static override summary = 'Import MiniMax Code history since a date (the cold start)';
  static override description =
    'Reads every session created on or after --since, converts it to agent memory, and delivers what is not delivered yet. Re-running it is a no-op.';
  static override examples = ['<%= config.bin %> import --since 2026-09-01', '<%= config.bin %> import --since 2026-09-01 --sink everme --json'];
  static override flags = {
    since: requiredSinceFlag('first day to import (YYYY-MM-DD, UTC)'),
    sink: sinkFlag('where memories go (default: everme when an API key is configured, else local)'),
    concurrency: concurrencyFlag,
    'dry-run': Flags.boolean({ description: 'read and convert, but touch neither the network nor the state', default: false }),
  };

  async run(): Promise<RunSummary> {
    const { flags } = await this.parse(Import);
    const dataDir = requireDataDir(resolveDataDir(flags['data-dir']));
    const settings = loadSettings(dataDir);
    const sink = sinkFrom(flags.sink, settings);
    const progress = createProgress('import', { json: this.jsonMode });
    const summary = await runPipeline({
      mode: 'import',
      settings,
      sink,
      since: flags.since.text,
      sinceMs: flags.since.ms,
      concurrency: flags.concurrency,
      dryRun: flags['dry-run'],
      signal: this.abort.signal,
      onProgress: (p) => progress.update(p),
    }).finally(() => progress.stop());
    return this.result(finishRun(summary, this.jsonMode), () => renderRunSummary(summary));
  }
}
