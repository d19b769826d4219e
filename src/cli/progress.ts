import cliProgress from 'cli-progress';
import type { RunProgress } from '../engine/run-pipeline.js';

export interface ProgressReporter {
  update(progress: RunProgress): void;
  stop(): void;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * A bar on a terminal, a plain line every few seconds otherwise (logs, CI), nothing with --json.
 * Always stderr: stdout is for the result.
 */
export function createProgress(label: string, opts: { json: boolean; stream?: NodeJS.WriteStream }): ProgressReporter {
  const stream = opts.stream ?? process.stderr;
  if (opts.json) return { update: () => {}, stop: () => {} };
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        stream,
        format: `${label} [{bar}] {value}/{total} sessions | {messages} messages | {bytes} | ETA {eta_formatted}`,
        hideCursor: true,
        clearOnComplete: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      update(p) {
        if (!started) {
          bar.start(p.sessionsTotal, 0, { messages: 0, bytes: formatBytes(0) });
          started = true;
        }
        bar.setTotal(p.sessionsTotal);
        bar.update(p.sessionsDone, { messages: p.messages, bytes: formatBytes(p.bytesDone) });
      },
      stop() {
        if (started) bar.stop();
      },
    };
  }
  let lastPrinted = 0;
  let last: RunProgress | undefined;
  const print = (p: RunProgress) =>
    stream.write(`${label}: ${p.sessionsDone}/${p.sessionsTotal} sessions, ${p.messages} messages, ${formatBytes(p.bytesDone)}\n`);
  return {
    update(p) {
      last = p;
      const now = Date.now();
      if (now - lastPrinted >= 2000) {
        lastPrinted = now;
        print(p);
      }
    },
    stop() {
      if (last && lastPrinted !== 0) print(last);
    },
  };
}
