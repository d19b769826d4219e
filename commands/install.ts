import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { installOutcomeError, runInstall, type InstallResult } from '../src/install/install-plan.js';
import { renderInstall, renderWarnings } from '../src/install/render.js';

export default class Install extends EvermeCommand<typeof Install> {
  static override summary = 'Wire everme into MiniMax Code: hooks, MCP server, settings';
  static override description =
    'Stages a self-contained copy of everme under <data>/everme/runtime, writes <data>/everme.env (mode 600), ' +
    'registers the hook on both routes MiniMax Code builds use: the local plugin <data>/plugins/everme-memory (every hook event) ' +
    'and the PreToolUse/PostToolUse markdown hooks in <data>/hooks; adds the "everme-memory" MCP server to <data>/mcp.json, ' +
    "and warns when MiniMax's own everme@official plugin is enabled. Re-running it changes nothing unless something changed. " +
    'An mcp.json that is not valid JSON is left untouched: the other steps still run and the command exits 1 (conflict).';
  static override examples = [
    '<%= config.bin %> install',
    '<%= config.bin %> install --api-key evt_… --dry-run',
    '<%= config.bin %> install --data-dir ~/.minimax-work --json',
  ];
  static override flags = {
    'api-key': Flags.string({ description: 'EverMe API key to store in everme.env (never printed)' }),
    'api-base': Flags.string({ description: 'EverMe gateway base URL to store in everme.env' }),
    'dry-run': Flags.boolean({ description: 'list the planned changes without writing anything', default: false }),
  };

  async run(): Promise<InstallResult> {
    const { flags } = this;
    const result = await runInstall({
      dataDir: this.dataDir({ mayBeMissing: true }),
      apiKey: flags['api-key'],
      apiBase: flags['api-base'],
      dryRun: flags['dry-run'],
    });
    const failure = installOutcomeError(result);
    return this.resultWithWarnings(result, failure, () => renderInstall(result), renderWarnings(result.warnings, failure));
  }
}
