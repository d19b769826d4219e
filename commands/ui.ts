import { Flags } from '@oclif/core';
import { EvermeCommand } from '../src/cli/base-command.js';
import { successEnvelope, writeStderr } from '../src/cli/output.js';
import { openBrowser, shouldOpenBrowser } from '../src/ui/open-browser.js';
import { startViewer } from '../src/ui/viewer.js';

export default class Ui extends EvermeCommand {
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
    const { flags } = await this.parse(Ui);
    const settings = this.settings();
    const viewer = await startViewer({ settings, ...(flags.port === undefined ? {} : { port: flags.port }) });
    let removeLaunchFile: (() => void) | undefined;
    try {
      // One line on stdout as soon as it serves (with --json, the one envelope). Written as is, not
      // through the output redaction: the URL's secret is this launch's key to the page and must
      // reach the user whole (redaction masks `token=` values).
      const line = this.jsonMode ? JSON.stringify(successEnvelope({ url: viewer.url, port: viewer.port })) : viewer.url;
      process.stdout.write(`${line}\n`);
      this.announced = true;
      writeStderr(`everme ui: serving ${settings.stateDir} at ${viewer.origin} (Ctrl-C to stop)`);
      if (shouldOpenBrowser(flags.open)) removeLaunchFile = await openBrowser(viewer.url, writeStderr);
      await new Promise<void>((resolve) => {
        if (this.abort.signal.aborted) resolve();
        else this.abort.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      removeLaunchFile?.();
      await viewer.close();
    }
    return { url: viewer.url, port: viewer.port };
  }

  /** The envelope was printed when the viewer started; stopping it prints nothing more. */
  protected override logJson(json: unknown): void {
    if (!this.announced) super.logJson(json);
  }
}
