import { Command, Flags } from '@oclif/core';
import { runHookFromProcess } from '../src/hook/hook-entry.js';

/**
 * Listed here for help and the manifest; bin/run.js normally runs the hook without loading oclif,
 * because it sits on the agent's hot path.
 */
export default class Hook extends Command {
  static override summary = 'MiniMax Code hook: capture this session in the background, recall at session start (fail-open)';
  static override description =
    'Reads the hook JSON on stdin and dispatches on hook_event_name: tool calls, Stop, PreCompact and SessionEnd start a detached worker that delivers what is new in the session; SessionStart prints recalled memory for the workspace on stdout. Always exits 0; prints nothing else on stdout.';
  static override hidden = false;
  static override flags = {
    // Which install route's command ran the hook, for `everme status`; read by the hook itself from argv.
    route: Flags.string({ options: ['plugin', 'markdown'], hidden: true }),
  };

  async run(): Promise<void> {
    await runHookFromProcess();
  }
}
