import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { concurrencyFlag, sinceFlag, sinkFlag, sinkFrom } from '../src/cli/flags.js';
import { createProgress } from '../src/cli/progress.js';
import { renderRunSummary } from '../src/cli/render-run.js';
import { finishRun } from '../src/cli/run-output.js';
import type { RunSummary } from '../src/engine/run-pipeline.js';
import { runSync } from '../src/engine/sync-run.js';

export default class Sync extends EvermeCommand<typeof Sync> {
  static override summary = 'Deliver what is new in changed sessions since the last import or sync';
  static override description =
    'Unchanged sessions are skipped without being read. The horizon is the earliest --since an import used; with no import yet, the last 24 hours.';
  static override examples = ['<%= config.bin %> sync', '<%= config.bin %> sync --session mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40 --json'];
  static override flags = {
    session: Flags.string({ description: 'only this session id (mvs_…)' }),
    since: sinceFlag('override the horizon (YYYY-MM-DD, UTC)'),
    sink: sinkFlag('where memories go (default: everme when an API key is configured, else local)'),
    concurrency: concurrencyFlag,
  };

  async run(): Promise<RunSummary> {
    const { flags } = this;
    const settings = this.settings();
    const progress = createProgress('sync', { json: this.jsonMode });
    const summary = await runSync({
      dataDir: this.dataDir(),
      settings,
      sink: sinkFrom(flags.sink, settings),
      session: flags.session,
      sinceMs: flags.since?.ms,
      concurrency: flags.concurrency,
      signal: this.abort.signal,
      onProgress: (p) => progress.update(p),
    }).finally(() => progress.stop());
    return this.result(finishRun(summary, this.jsonMode), () => renderRunSummary(summary));
  }
}
