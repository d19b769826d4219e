import { loadSettings } from '../src/config/settings.js';
import { runPipeline } from '../src/engine/run-pipeline.js';

/** Runs one import or sync in this process and reports its time, CPU and peak RSS as one JSON line. */
async function main(mode: 'import' | 'sync', dataDir: string, stateDir: string): Promise<void> {
  const settings = { ...loadSettings(dataDir, {}, { EVERME_STATE_DIR: stateDir }), apiKey: undefined };
  const started = performance.now();
  const summary = await runPipeline({ mode, settings, sink: 'local', since: '2026-06-01', sinceMs: Date.UTC(2026, 5, 1), ...(process.env.BENCH_CONCURRENCY ? { concurrency: Number(process.env.BENCH_CONCURRENCY) } : {}) });
  process.stdout.write(
    `${JSON.stringify({
      ms: performance.now() - started,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      // CPU of every thread of this process (main, writer, checkpoints), for the cores used.
      cpuMs: (process.resourceUsage().userCPUTime + process.resourceUsage().systemCPUTime) / 1000,
      sessions: summary.sessions,
      workspaceUnknown: summary.workspaceUnknown,
      messages: summary.messages,
      requests: summary.requests,
      warnings: summary.warnings,
    })}\n`,
  );
}

void main(process.argv[2] as 'import' | 'sync', process.argv[3]!, process.argv[4]!);
