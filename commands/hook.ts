import { Command, Flags } from '@oclif/core';
import { runHookFromProcess } from '../src/hook/hook-entry.js';

/**
 * Listed here for help and the manifest; bin/run.js normally runs the hook without loading oclif,
 * because it sits on the agent's hot path.
 */
export default class Hook extends Command {
  static override summary = 'MiniMax Code hook: capture this session in the background (fail-open)';
  static override description =
    'Reads the hook JSON on stdin, starts a detached worker that delivers what is new in the session, and exits 0 at once. Prints nothing on stdout.';
  static override hidden = false;
  static override flags = {
    // Which install route's command ran the hook, for `everme status`; read by the hook itself from argv.
    route: Flags.string({ options: ['plugin', 'markdown'], hidden: true }),
  };

  async run(): Promise<void> {
    await runHookFromProcess();
  }
}
