import { Args } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { EvermeError } from '../src/core/errors.js';
import { requireDataDir, resolveDataDir } from '../src/config/data-dir.js';
import { previewSession, type SessionPreview } from '../src/report/session-preview.js';
import { locateSession } from '../src/transcript/session-locate.js';

function renderPreview(p: SessionPreview): string {
  const lines = [
    `conversation ${p.conversationId} (${p.source}${p.historyFile ? `: ${p.historyFile}` : ''})`,
    `${p.messages.length} messages in ${p.requests.length} requests`,
  ];
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

export default class Show extends EvermeCommand {
  static override summary = 'Show one session exactly as it would be uploaded (converted, cleaned, redacted)';
  static override description =
    'A privacy preview: the agent-memory messages an import would deliver for this session, after redaction and batching, with the warnings the reader raised. Nothing is written.';
  static override examples = ['<%= config.bin %> show mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40', '<%= config.bin %> show mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40 --json'];
  static override args = {
    sessionId: Args.string({ description: 'session id (mvs_…)', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Show);
    const dataDir = requireDataDir(resolveDataDir(flags['data-dir']));
    const session = await locateSession(dataDir, args.sessionId);
    if (!session) {
      throw new EvermeError('not_found', `No session ${args.sessionId} under ${dataDir}`, {
        hint: 'Session ids look like mvs_ followed by 32 hex digits.',
      });
    }
    const preview = await previewSession(session);
    this.emit(preview, () => renderPreview(preview));
  }
}
