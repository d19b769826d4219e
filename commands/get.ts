import { Args, Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { formatOpened, getMessages, type OpenedMessage } from '../src/recall/open-messages.js';

export default class Get extends EvermeCommand<typeof Get> {
  static override summary = 'Print whole stored messages by id (the ids `everme search` shows)';
  static override description =
    'Opens messages of the embedded store by the ids search hits and recall indexes name (m123): each whole, with its conversation, role, time and project. A long message is printed a page at a time; --offset starts a later page. Reads the local store in either mode.';
  static override examples = ['<%= config.bin %> get m1042', '<%= config.bin %> get m1042 m1043 --json', '<%= config.bin %> get m1042 --offset 12000'];
  static override strict = false;
  static override args = {
    ids: Args.string({ description: 'message ids (m123), one or more', required: true }),
  };
  static override flags = {
    offset: Flags.integer({ description: 'for a long message: the character to start from', min: 0, default: 0 }),
  };

  async run(): Promise<{ messages: OpenedMessage[] }> {
    const messages = getMessages(this.settings().stateDir, this.positionals, this.flags.offset);
    return this.result({ messages }, () => messages.map(formatOpened).join('\n\n'));
  }
}
