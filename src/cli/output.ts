import { EvermeError, exitCodeFor } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';

/** stdout carries results only; everything for humans that is not the result goes to stderr. */
export function writeStdout(text: string): void {
  process.stdout.write(redactOutput(text.endsWith('\n') ? text : `${text}\n`));
}

function onStdoutError(err: NodeJS.ErrnoException): void {
  // The reader stopped early (`| head`): what it did not read was not wanted.
  if (err.code === 'EPIPE') return;
  const failure = new EvermeError('io', `Could not write the output to stdout (${err.code ?? err.message})`, {
    code: 'stdout_unwritable',
    hint: 'What the command did (an import or sync committed) is kept; only its output was lost. Point stdout at a file or pipe that can take it.',
  });
  const code = reportErrorText(failure);
  if (!process.exitCode) process.exitCode = code;
}

/**
 * A stdout that cannot take the result (a file on a full disk, `> /dev/full`) fails the write
 * after the command returned, in an 'error' event. oclif's listener rethrows every such error
 * but EPIPE, so the user got node's stack trace and exit 1. Called once the command's modules are
 * loaded (oclif adds its listener when its Command class loads): this listener is then the only
 * one, and the failure is one `io` line on stderr, exit 5.
 */
export function guardStdout(): void {
  if (process.stdout.listeners('error').includes(onStdoutError)) return;
  process.stdout.removeAllListeners('error');
  process.stdout.on('error', onStdoutError);
}

export function writeStderr(text: string): void {
  process.stderr.write(redactOutput(text.endsWith('\n') ? text : `${text}\n`));
}

export interface SuccessEnvelope {
  ok: true;
  data: unknown;
  meta?: Record<string, unknown>;
}

export interface ErrorEnvelope {
  ok: false;
  error: { type: EvermeError['type']; code: string; message: string; hint?: string; detail?: Record<string, unknown> };
}

export function successEnvelope(data: unknown, meta?: Record<string, unknown>): SuccessEnvelope {
  return meta === undefined ? { ok: true, data } : { ok: true, data, meta };
}

export function errorEnvelope(err: EvermeError): ErrorEnvelope {
  const error: ErrorEnvelope['error'] = { type: err.type, code: err.code, message: err.message };
  if (err.hint !== undefined) error.hint = err.hint;
  if (err.detail !== undefined) error.detail = err.detail;
  return { ok: false, error };
}

/** A failure in text mode: `error:` and `hint:` on stderr, stdout untouched. Returns the exit code. */
export function reportErrorText(err: EvermeError): number {
  writeStderr(`error: ${err.message}`);
  if (err.hint) writeStderr(`hint: ${err.hint}`);
  return exitCodeFor(err.type);
}

/**
 * A command's failure, already in the taxonomy: the error envelope on stdout with --json, else the
 * text on stderr; returns the exit code. `thrown` is what was caught, whose stack EVERME_DEBUG shows
 * for a defect (`internal`), never for a user's mistake.
 */
export function reportFailure(failure: EvermeError, json: boolean, thrown: unknown): number {
  if (failure.type === 'internal' && process.env.EVERME_DEBUG) {
    process.stderr.write(`${thrown instanceof Error ? (thrown.stack ?? String(thrown)) : String(thrown)}\n`);
  }
  if (!json) return reportErrorText(failure);
  writeStdout(JSON.stringify(errorEnvelope(failure)));
  return exitCodeFor(failure.type);
}
