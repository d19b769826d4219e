import { WARNING_CODES } from '../core/warnings.js';
import type { ImportExportSummary } from '../export/import-export.js';
import type { ExportSummary } from '../export/export-memory.js';
import { MAX_CONTENT_BYTES } from '../memory/content-cap.js';

/**
 * The file's warnings by what became of their lines: a line whose message was over the cap
 * (`oversized_unit`) was kept, cut; every other code's lines were skipped. The file is not a
 * session, so `everme report` does not list them.
 */
function warningsLine(warnings: ImportExportSummary['warnings']): string {
  const counted = (keep: boolean) =>
    Object.entries(warnings)
      .filter(([code]) => (code === 'oversized_unit') === keep)
      .map(([code, count]) => `${code} ${count}`);
  const skipped = counted(false);
  const kept = counted(true);
  const said = [
    ...(skipped.length > 0 ? [`${skipped.join(', ')} (lines skipped)`] : []),
    ...(kept.length > 0 ? [`${kept.join(', ')} (kept, capped at ${MAX_CONTENT_BYTES / (1024 * 1024)} MiB)`] : []),
  ];
  return said.length === 0 ? 'warnings: none' : `warnings: ${said.join('; ')}`;
}

export function renderImportExport(s: ImportExportSummary): string {
  if (s.alreadyImported) return `${s.file} was imported before: nothing to do (\`--again\` reads it again).`;
  const lines = [`import from export ${s.file} → local`, `conversations: ${s.conversations}, messages: ${s.messages} new`];
  if (s.skipped.forgotten > 0 || s.skipped.excluded > 0) {
    lines.push(`skipped: ${s.skipped.forgotten} forgotten, ${s.skipped.excluded} excluded`);
  }
  lines.push(warningsLine(s.warnings));
  // Where, never what: the line numbers (the first few of each code), as `report` samples a session's.
  for (const code of WARNING_CODES) {
    const count = s.warnings[code] ?? 0;
    const at = s.warningLines[code] ?? [];
    if (at.length > 0) lines.push(`  ${code}: line${count === 1 ? '' : 's'} ${at.join(', ')}${count > at.length ? ' …' : ''}`);
  }
  return lines.join('\n');
}

/** The one line an export ends with (on stderr when the export itself went to stdout). */
export function renderExportSummary(s: ExportSummary): string {
  const where = s.out === '-' ? 'stdout' : s.format === 'jsonl' ? s.files[0] ?? s.out : `${s.files.length} file${s.files.length === 1 ? '' : 's'} in ${s.out}`;
  return `exported ${s.conversations} conversation${s.conversations === 1 ? '' : 's'}, ${s.messages} message${s.messages === 1 ? '' : 's'} (${s.format}) to ${where}`;
}
