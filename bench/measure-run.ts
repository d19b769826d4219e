import { loadSettings, type SinkName } from '../src/config/settings.js';
import { runPipeline } from '../src/engine/run-pipeline.js';

/**
 * Runs one import or sync in this process and reports its time, CPU and peak RSS as one JSON line.
 * The sink is the embedded store unless a fourth argument says `everme`: then the gateway at
 * EVERME_API_BASE (a loopback one in the bench), with the store too unless EVERME_LOCAL_STORE=0.
 */
async function main(mode: 'import' | 'sync', dataDir: string, stateDir: string, sink: SinkName): Promise<void> {
  const env = { EVERME_STATE_DIR: stateDir, EVERME_API_BASE: process.env.EVERME_API_BASE, EVERME_API_KEY: process.env.EVERME_API_KEY, EVERME_LOCAL_STORE: process.env.EVERME_LOCAL_STORE };
  const loaded = loadSettings(dataDir, {}, env);
  const settings = sink === 'local' ? { ...loaded, apiKey: undefined } : loaded;
  const started = performance.now();
  const summary = await runPipeline({ mode, settings, sink, since: '2026-06-01', sinceMs: Date.UTC(2026, 5, 1), ...(process.env.BENCH_CONCURRENCY ? { concurrency: Number(process.env.BENCH_CONCURRENCY) } : {}) });
  process.stdout.write(
    `${JSON.stringify({
      ms: performance.now() - started,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      // CPU of every thread of this process (main, plan workers, writer, checkpoints), for the cores used.
      cpuMs: (process.resourceUsage().userCPUTime + process.resourceUsage().systemCPUTime) / 1000,
      sessions: summary.sessions,
      workspaceUnknown: summary.workspaceUnknown,
      messages: summary.messages,
      requests: summary.requests,
      warnings: summary.warnings,
      sinks: summary.sinks.map((s) => ({ sink: s.sink, messages: s.messages, failed: s.sessions.failed })),
    })}\n`,
  );
}

void main(process.argv[2] as 'import' | 'sync', process.argv[3]!, process.argv[4]!, (process.argv[5] ?? 'local') as SinkName);
