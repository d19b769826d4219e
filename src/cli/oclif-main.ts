/**
 * oclif's entry, bundled with the commands (`npm run build`) so that bin/run.js and every command share
 * one copy of @oclif/core, loaded as a few files instead of some 150 modules.
 */
import { execute as executeOclif } from '@oclif/core';
import { guardStdout } from './output.js';

/**
 * oclif prints help and the version itself, without a command's `init`: stdout is guarded here,
 * once @oclif/core is loaded (its listener is added then), so a failed write is stdout_unwritable.
 */
export async function execute(options: Parameters<typeof executeOclif>[0]): Promise<unknown> {
  guardStdout();
  return executeOclif(options);
}
