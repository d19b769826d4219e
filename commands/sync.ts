import { EvermeCommand } from '../src/cli/base-command.js';
import { concurrencyFlag, namingFlag, sinceFlag, sinkFlag } from '../src/cli/flags.js';
import { renderRunSummary } from '../src/cli/render-run.js';
import { runSyncFlow } from '../src/cli/sync-flow.js';
import type { RunSummary } from '../src/engine/run-pipeline.js';

/** bin/run.js starts most `everme sync` runs without oclif (src/cli/sync-entry.ts); this is the rest. */
export default class Sync extends EvermeCommand<typeof Sync> {
  static override summary = 'Deliver what is new in changed sessions since the last import or sync';
  static override description =
    'Unchanged sessions are skipped without being read. The horizon is the earliest --since an import used; with no import yet, the last 24 hours.';
  static override examples = ['<%= config.bin %> sync', '<%= config.bin %> sync --session mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40 --json'];
  static override flags = {
    session: namingFlag('only this session id (mvs_…)', 'Pass --session mvs_…: a session id `everme report` or `everme show` listed.'),
    since: sinceFlag('override the horizon (YYYY-MM-DD, UTC)'),
    sink: sinkFlag('where memories go (default: everme when an API key is configured, else local)'),
    concurrency: concurrencyFlag,
  };

  async run(): Promise<RunSummary> {
    const summary = await runSyncFlow(this.flags, this.flowContext());
    return this.result(summary, () => renderRunSummary(summary));
  }
}
