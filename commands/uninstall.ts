import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { renderUninstall, renderWarnings } from '../src/install/render.js';
import { runUninstall, uninstallOutcomeError, type UninstallResult } from '../src/install/uninstall-plan.js';

export default class Uninstall extends EvermeCommand<typeof Uninstall> {
  static override summary = 'Remove what `everme install` added to MiniMax Code';
  static override description =
    'Removes what install added and nothing else: the local plugin <data>/plugins/everme-memory, the two markdown hooks in ' +
    '<data>/hooks, the "everme-memory" MCP server entry in <data>/mcp.json (restoring the file as it was) and the staged ' +
    'runtime <data>/everme/runtime; a hook file, plugin file or MCP entry that is not everme\'s stays. The memory store and <data>/everme.env stay unless --purge is given; an everme.env ' +
    'is never deleted while it holds lines install did not write (EverMe\'s agent token): --purge takes out only what install wrote.';
  static override examples = ['<%= config.bin %> uninstall', '<%= config.bin %> uninstall --purge --json'];
  static override flags = {
    purge: Flags.boolean({ description: 'also delete the memory store (<data>/everme, or its files in EVERME_STATE_DIR) and what install wrote into everme.env (the file once nothing else is in it)', default: false }),
    'dry-run': Flags.boolean({ description: 'list what would be removed without removing it', default: false }),
  };

  async run(): Promise<UninstallResult> {
    const { flags } = this;
    const result = runUninstall({ dataDir: this.dataDir({ mayBeMissing: true }), purge: flags.purge, dryRun: flags['dry-run'] });
    const failure = uninstallOutcomeError(result);
    return this.resultWithWarnings(result, failure, () => renderUninstall(result), renderWarnings(result.warnings, failure));
  }
}
