import cliProgress from 'cli-progress';
import type { ExportProgress } from '../export/export-memory.js';

export interface ExportProgressReporter {
  update(p: ExportProgress): void;
  stop(): void;
}

/** A bar on stderr when it is a terminal; nothing otherwise (stdout may be carrying the export). */
export function createExportProgress(opts: { json: boolean; stream?: NodeJS.WriteStream }): ExportProgressReporter {
  const stream = opts.stream ?? process.stderr;
  if (opts.json || !stream.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    { stream, format: 'export [{bar}] {value}/{total} conversations | {messages} messages | ETA {eta_formatted}', hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(p) {
      if (!started) {
        bar.start(p.conversationsTotal, 0, { messages: 0 });
        started = true;
      }
      bar.update(p.conversationsDone, { messages: p.messages });
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
