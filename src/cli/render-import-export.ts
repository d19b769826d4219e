import type { ImportExportSummary } from '../export/import-export.js';

export function renderImportExport(s: ImportExportSummary): string {
  if (s.alreadyImported) return `${s.file} was imported before: nothing to do.`;
  const lines = [`import from export ${s.file} → local`, `conversations: ${s.conversations}, messages: ${s.messages} new`];
  if (s.skipped.forgotten > 0 || s.skipped.excluded > 0) {
    lines.push(`skipped: ${s.skipped.forgotten} forgotten, ${s.skipped.excluded} excluded`);
  }
  const skipped = Object.entries(s.warnings).map(([code, count]) => `${code} ${count}`);
  // These lines of the file were skipped; the file is not a session, so `everme report` does not list them.
  lines.push(skipped.length === 0 ? 'warnings: none' : `warnings: ${skipped.join(', ')} (lines skipped)`);
  return lines.join('\n');
}
