import type { Hook } from '@oclif/core';
import { EvermeError, exitCodeFor } from '../core/errors.js';
import { errorEnvelope, guardStdout, reportErrorText, writeStdout } from './output.js';

/**
 * oclif's `command_not_found` hook: an unknown command is a bad argument like any other, answered
 * the one way every command answers (one envelope on stdout under `--json`, `error:`/`hint:` on
 * stderr otherwise, exit 2), never oclif's own banner.
 */
const commandNotFound: Hook<'command_not_found'> = function (opts) {
  const known = [...opts.config.commandIDs].filter((id) => !id.includes(':')).sort();
  // `everme sync extra` reaches here as `sync:extra` (oclif joins the words to look for a command):
  // a word a command does not take, which that command's help explains.
  const [first, ...rest] = opts.id.split(':');
  const err =
    first !== undefined && rest.length > 0 && known.includes(first)
      ? new EvermeError('invalid_args', `Unexpected argument: ${rest.join(' ')}`, {
          code: 'unexpected_argument',
          hint: `See \`everme ${first} --help\`.`,
        })
      : new EvermeError('invalid_args', `Unknown command: ${opts.id}`, {
          code: 'unknown_command',
          hint: `Commands: ${known.join(', ')}. See \`everme --help\`.`,
        });
  if ((opts.argv ?? []).includes('--json')) {
    guardStdout();
    writeStdout(JSON.stringify(errorEnvelope(err)));
    process.exitCode = exitCodeFor(err.type);
  } else {
    process.exitCode = reportErrorText(err);
  }
  // oclif awaits a hook: it answers at once.
  return Promise.resolve();
};

export default commandNotFound;
