import type { SessionPreview } from './session-preview.js';

/** `everme show` in text mode: the messages as they would be uploaded, then the reader's warnings. */
export function renderPreview(p: SessionPreview): string {
  const lines = [
    `conversation ${p.conversationId} (${p.source}${p.historyFile ? `: ${p.historyFile}` : ''})`,
    `${p.messages.length} messages in ${p.requests.length} requests`,
  ];
  if (p.skipped?.reason === 'forgotten') {
    lines.push('skipped: forgotten, so an import or sync delivers none of this (`everme forget --undo` lets it in again)');
  } else if (p.skipped?.reason === 'excluded') {
    lines.push(`skipped: its workspace ${p.skipped.workspaceDir} is excluded by ${p.skipped.rule}, so an import or sync delivers none of this`);
  }
  for (const m of p.messages) {
    const when = new Date(m.timestamp).toISOString();
    if (m.role === 'tool') {
      lines.push(`\n[${when}] tool result ${m.toolCallId}`, m.content);
    } else if (m.role === 'assistant') {
      lines.push(`\n[${when}] assistant${m.turnComplete ? ' (turn complete)' : ''}`);
      if (m.content) lines.push(m.content);
      for (const call of m.toolCalls ?? []) lines.push(`→ ${call.name} ${call.id} ${call.arguments}`);
    } else {
      lines.push(`\n[${when}] user`, m.content);
    }
  }
  lines.push('', p.warnings.length === 0 ? 'warnings: none' : 'warnings:');
  for (const w of p.warnings) {
    lines.push(`  ${w.code} ×${w.count}  ${w.samples.map((s) => `${s.file}:${s.line}`).join(', ')}`);
  }
  return lines.join('\n');
}
