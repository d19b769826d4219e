import { Args } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { nonBlank } from '../src/cli/flag-values.js';
import { renderPreview } from '../src/report/render-preview.js';
import { previewSessionById, type SessionPreview } from '../src/report/session-preview.js';

export default class Show extends EvermeCommand<typeof Show> {
  static override summary = 'Show one session exactly as it would be uploaded (converted, cleaned, redacted)';
  static override description =
    'A privacy preview: the agent-memory messages an import would deliver for this session, after redaction and batching, with the warnings the reader raised. Nothing is written.';
  static override examples = ['<%= config.bin %> show mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40', '<%= config.bin %> show mvs_3f9c2a7d41e84b0c9d5a6e1f7b2c8d40 --json'];
  static override args = {
    sessionId: Args.string({ description: 'session id (mvs_…)', required: true, parse: (input) => Promise.resolve(nonBlank(input, 'The session id', 'Pass a session id (mvs_…).')) }),
  };

  async run(): Promise<SessionPreview> {
    const preview = await previewSessionById(this.settings(), this.args.sessionId);
    return this.result(preview, () => renderPreview(preview));
  }
}
