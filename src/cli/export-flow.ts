import { resolveUserPath } from '../config/exclude.js';
import { blockingFile } from '../core/private-dir.js';
import { EvermeError } from '../core/errors.js';
import { exportMemory, type ExportFormat, type ExportSummary } from '../export/export-memory.js';
import { createExportProgress } from './export-progress.js';
import { nonBlank } from './flag-values.js';
import type { FlowContext } from './base-command.js';

/** What `everme export` was asked: the format, where to (`-` is stdout) and which conversations. */
export interface ExportRequest {
  format: ExportFormat;
  out?: string;
  conversation?: string;
  project?: string;
  sinceMs?: number;
}

/** Where the export goes: jsonl defaults to stdout; markdown (a file per conversation) needs a directory. */
function exportTarget(request: ExportRequest, json: boolean): string {
  // empty_value, as every other blank value that names a directory or a file.
  if (request.out !== undefined) nonBlank(request.out, '--out', 'Pass --out DIR, or --out - for stdout (jsonl).');
  const out = request.out ?? (request.format === 'jsonl' ? '-' : undefined);
  if (out === undefined) throw new EvermeError('invalid_args', 'A markdown export is one file per conversation', { hint: 'Pass --out DIR.' });
  if (out === '-' && json) {
    throw new EvermeError('invalid_args', '--json prints one envelope on stdout, so the export cannot go there too', { hint: 'Pass --out DIR with --json.' });
  }
  if (out === '-') return out;
  const dir = resolveUserPath(out);
  const file = blockingFile(dir);
  if (file !== undefined) {
    // io, as for any --out that cannot be created (a read-only place, a symlink loop), with the file named.
    throw new EvermeError('io', file === dir ? `--out names a directory, and ${dir} is a file` : `--out ${dir} cannot be created: ${file} is a file`, {
      code: 'out_not_a_directory',
      hint: 'Pass --out DIR (a directory, created if missing), or --out - for stdout (jsonl).',
      detail: { path: dir, file },
    });
  }
  return dir;
}

/** `everme export`: the local store's conversations out as jsonl or markdown, with a bar on a terminal. */
export async function runExport(request: ExportRequest, context: FlowContext): Promise<ExportSummary> {
  const out = exportTarget(request, context.json);
  const settings = context.settings();
  const progress = createExportProgress({ json: context.json });
  return exportMemory(settings, {
    format: request.format,
    out,
    filter: {
      ...(request.conversation === undefined ? {} : { conversationId: request.conversation }),
      ...(request.project === undefined ? {} : { project: resolveUserPath(request.project) }),
      ...(request.sinceMs === undefined ? {} : { sinceMs: request.sinceMs }),
    },
    signal: context.signal,
    onProgress: (p) => progress.update(p),
  }).finally(() => progress.stop());
}
