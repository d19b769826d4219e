import { EvermeCommand } from '../src/cli/base-command.js';
import { namingFlag, PROJECT_HINT, sinkFlag } from '../src/cli/flags.js';
import { writeStderr } from '../src/cli/output.js';
import { serveRecall } from '../src/mcp/server.js';
import { resolveUserPath } from '../src/config/exclude.js';
import { workingDirectory } from '../src/core/working-directory.js';

export default class Mcp extends EvermeCommand<typeof Mcp> {
  static override summary = 'Serve recall over MCP on stdio (mem_search, mem_get, mem_timeline, mem_context)';
  static override description =
    'A Model Context Protocol server for MiniMax Code: mem_search searches your memories, mem_get opens whole messages by id, ' +
    'mem_timeline shows the messages around one, and mem_context lists recent conversations of the current project. ' +
    'All are read-only. stdout carries only protocol frames; diagnostics go to stderr.';
  static override examples = ['<%= config.bin %> mcp', '<%= config.bin %> mcp --project ~/src/widget'];
  static override flags = {
    project: namingFlag('the project mem_context describes (default: the current directory)', PROJECT_HINT),
    sink: sinkFlag('where to recall from (default: everme when an API key is configured, else local)'),
  };

  async run(): Promise<void> {
    const { flags } = this;
    const project = resolveUserPath(flags.project ?? workingDirectory());
    await serveRecall({ settings: () => this.settings(), sink: flags.sink, project, log: writeStderr, signal: this.abort.signal });
  }
}
