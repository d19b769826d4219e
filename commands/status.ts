import { EvermeCommand } from '../src/cli/base-command.js';
import { collectStatus, renderStatus, statusFailureText, statusOutcomeError, type StatusReport } from '../src/status/status.js';

export default class Status extends EvermeCommand<typeof Status> {
  static override summary = 'Show whether capture and recall work: data dir, sink, hooks, store, warnings';
  static override description = 'Exits non-zero with a hint when something is broken (no hooks, a dead gateway, a missing runtime, an unreadable mcp.json, nothing imported).';
  static override examples = ['<%= config.bin %> status', '<%= config.bin %> status --json'];

  async run(): Promise<StatusReport> {
    const status = await collectStatus(this.settings());
    const failure = statusOutcomeError(status);
    if (failure) return this.failWithReport(failure, () => statusFailureText(status));
    return this.result(status, () => renderStatus(status));
  }
}
