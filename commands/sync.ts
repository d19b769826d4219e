import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { concurrencyFlag, sinceFlag, sinkFlag, sinkFrom } from '../src/cli/flags.js';
import { EvermeError } from '../src/core/errors.js';
import { createProgress } from '../src/cli/progress.js';
import { renderRunSummary } from '../src/cli/render-run.js';
import { finishRun } from '../src/cli/run-output.js';
import { requireDataDir, resolveDataDir } from '../src/config/data-dir.js';
import { loadSettings } from '../src/config/settings.js';
import { openEngine } from '../src/engine/engine-context.js';
import { runPipeline, type RunSummary } from '../src/engine/run-pipeline.js';
import { syncHorizon } from '../src/engine/sync-horizon.js';
import { locateSession } from '../src/transcript/session-locate.js';

export default class Sync extends EvermeCommand {
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
    const { flags } = await this.parse(Sync);
    const dataDir = requireDataDir(resolveDataDir(flags['data-dir']));
    const settings = loadSettings(dataDir);
    const sink = sinkFrom(flags.sink, settings);
    const engine = openEngine(settings, sink);
    try {
      let sessions;
      if (flags.session) {
        const found = await locateSession(dataDir, flags.session, { remembered: engine.marks.sessions.dirFor(flags.session) });
        if (!found) {
          throw new EvermeError('not_found', `No session ${flags.session} under ${dataDir}`, {
            hint: 'Session ids look like mvs_ followed by 32 hex digits; `everme status` shows the data dir in use.',
          });
        }
        engine.marks.sessions.rememberDir(found.sessionId, found.dir);
        sessions = [found];
      }
      const horizon = syncHorizon(engine.runs, flags.since?.ms);
      const progress = createProgress('sync', { json: this.jsonMode });
      const summary = await runPipeline({
        mode: 'sync',
        settings,
        sink,
        engine,
        sessions,
        sinceMs: horizon.sinceMs,
        since: horizon.since,
        concurrency: flags.concurrency,
        signal: this.abort.signal,
        onProgress: (p) => progress.update(p),
      }).finally(() => progress.stop());
      return this.result(finishRun(summary, this.jsonMode), () => renderRunSummary(summary));
    } finally {
      engine.close();
    }
  }
}
