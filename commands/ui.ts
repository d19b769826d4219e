import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { successEnvelope, writeStderr } from '../src/cli/output.js';
import { serveViewer } from '../src/ui/viewer.js';

export default class Ui extends EvermeCommand<typeof Ui> {
  static override summary = 'See, search and curate your memory in a local browser page';
  static override description =
    'Serves a viewer on 127.0.0.1 only: projects and their activity, conversations, search, warnings, forget and undo, what the agent is told at session start, and capture health. ' +
    'Prints the URL (it carries a secret for this launch) as one line on stdout, opens a browser unless --no-open or there is no display, and serves until Ctrl-C.';
  static override examples = ['<%= config.bin %> ui', '<%= config.bin %> ui --port 0 --no-open', '<%= config.bin %> ui --data-dir fixtures/demo'];
  static override flags = {
    port: Flags.integer({ description: 'port on 127.0.0.1 (0: any free one; default: a stable per-user port, or a free one when that is taken)', min: 0, max: 65_535 }),
    open: Flags.boolean({ description: 'open a browser (--no-open: only print the URL)', default: true, allowNo: true }),
  };

  private announced = false;

  async run(): Promise<{ url: string; port: number }> {
    const { port, open } = this.flags;
    const announce = (served: { url: string; port: number }): void => {
      // One line on stdout as soon as it serves (with --json, the one envelope), not redacted: the
      // URL's secret (its path) must reach the user whole.
      process.stdout.write(`${this.jsonMode ? JSON.stringify(successEnvelope(served)) : served.url}\n`);
      this.announced = true;
    };
    return serveViewer({ settings: this.settings(), ...(port === undefined ? {} : { port }), open, signal: this.abort.signal, announce, log: writeStderr });
  }

  /** The envelope was printed when the viewer started; stopping it prints nothing more. */
  protected override logJson(json: unknown): void {
    if (!this.announced) super.logJson(json);
  }
}
