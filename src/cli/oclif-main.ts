/**
 * oclif's entry, bundled with the commands (`npm run build`) so that bin/run.js and every command share
 * one copy of @oclif/core, loaded as a few files instead of some 150 modules.
 */
import { handle, run } from '@oclif/core';
import { guardStdout } from './output.js';

/**
 * oclif prints help and the version itself, without a command's `init`: stdout is guarded here,
 * once @oclif/core is loaded (its listener is added then), so a failed write is stdout_unwritable.
 *
 * oclif's own `execute` is this plus a `flush()` that writes '' to stdout (and does not wait for
 * it). A full device (`> /dev/full`) fails even a write of nothing, so a command that printed
 * nothing on stdout (no search hits, a failure said on stderr) ended as stdout_unwritable, exit 5,
 * though no output was lost. Node writes out what was written before it exits, flush or not.
 */
export async function execute(options: { dir: string }): Promise<unknown> {
  guardStdout();
  return run(process.argv.slice(2), options.dir).catch(async (error: unknown) => handle(error as Error));
}
