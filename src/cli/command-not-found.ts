import type { Hook } from '@oclif/core';
import { EvermeError, exitCodeFor } from '../core/errors.js';
import { errorEnvelope, guardStdout, reportErrorText, writeJson } from './output.js';

/**
 * oclif's `command_not_found` hook: an unknown command is a bad argument like any other, answered
 * the one way every command answers (one envelope on stdout under `--json`, `error:`/`hint:` on
 * stderr otherwise, exit 2), never oclif's own banner.
 */
const commandNotFound: Hook<'command_not_found'> = function (opts) {
  const known = [...opts.config.commandIDs].filter((id) => !id.includes(':')).sort();
  const argv = opts.argv ?? [];
  const err = notFoundError(opts.id, argv, known);
  // A flag before any command (`everme --json`) is what oclif looked up as the command.
  if (opts.id === '--json' || argv.includes('--json')) {
    guardStdout();
    writeJson(errorEnvelope(err));
    process.exitCode = exitCodeFor(err.type);
  } else {
    process.exitCode = reportErrorText(err);
  }
  // oclif awaits a hook: it answers at once.
  return Promise.resolve();
};

/** The global flags whose value is the next word (`--data-dir D`): D is that value, never a command. */
const TAKES_VALUE = new Set(['--data-dir']);

/** The first word that is neither a flag nor a flag's value: what the user meant as the command. */
function firstWord(words: readonly string[]): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (TAKES_VALUE.has(word)) i++;
    else if (!word.startsWith('-')) return word;
  }
  return undefined;
}

function notFoundError(id: string, argv: readonly string[], known: readonly string[]): EvermeError {
  const commands = `Commands: ${known.join(', ')}. See \`everme --help\`.`;
  // `everme --json …`: a flag where the command belongs; the command, if any, is the first word after it.
  if (id.startsWith('-')) {
    const command = argv.find((arg) => known.includes(arg));
    if (command !== undefined) return new EvermeError('invalid_args', `${id} goes after the command`, { code: 'flag_before_command', hint: `Put the flags after \`everme ${command}\`; \`everme ${command} --help\` lists them.` });
    const word = firstWord([id, ...argv]);
    if (word === undefined) return new EvermeError('invalid_args', `No command given, only ${id}`, { code: 'missing_command', hint: `Name a command and put the flags after it. ${commands}` });
    return new EvermeError('invalid_args', `Unknown command: ${word}`, { code: 'unknown_command', hint: commands });
  }
  // `everme sync extra` reaches here as `sync:extra` (oclif joins the words to look for a command):
  // a word a command does not take, which that command's help explains.
  const [first, ...rest] = id.split(':');
  if (first !== undefined && rest.length > 0 && known.includes(first)) {
    return new EvermeError('invalid_args', `Unexpected argument: ${rest.join(' ')}`, { code: 'unexpected_argument', hint: `See \`everme ${first} --help\`.` });
  }
  return new EvermeError('invalid_args', `Unknown command: ${id}`, { code: 'unknown_command', hint: commands });
}

export default commandNotFound;
