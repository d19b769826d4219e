import { EvermeError, exitCodeFor, stdoutUnwritable } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';
import { printableLine, printableWords } from '../core/printable-words.js';

/**
 * A JSON document: the same value, with DEL and the C1 controls (which JSON.stringify leaves raw)
 * written as `\u` escapes, so a path holding `\u009b2J` cannot clear a terminal showing the output.
 * Outside strings a JSON document has only ASCII, so every such character is inside a string.
 */
function jsonText(json: string): string {
  const escaped = json.replace(/[\x7f-\x9f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return redactOutput(`${escaped}\n`);
}

/** stdout carries results only; everything for humans that is not the result goes to stderr. */
export function writeStdout(text: string): void {
  process.stdout.write(printableLine(text));
}

/** A JSON result (an envelope) on stdout, one line. */
export function writeJson(value: unknown): void {
  process.stdout.write(jsonText(JSON.stringify(value)));
}

/** stdout_unwritable was reported: every later failed write (and the writer's own error) is the same failure. */
let stdoutFailed = false;

function onStdoutError(err: NodeJS.ErrnoException): void {
  // The reader stopped early (`| head`): what it did not read was not wanted.
  if (err.code === 'EPIPE') return;
  reportStdoutUnwritable(stdoutUnwritable(err));
}

/**
 * Once, however many writes failed. Exit 5 replaces a success and exit 1 (status's "problems found",
 * a generic failure), which say less than an output that never arrived; a failure with its own code
 * (usage 2, auth 3, network 4, Ctrl-C 130) keeps it.
 */
function reportStdoutUnwritable(failure: EvermeError): number {
  const code = exitCodeFor(failure.type);
  if (!stdoutFailed) {
    stdoutFailed = true;
    reportErrorText(failure);
  }
  if (!process.exitCode || process.exitCode === 1) process.exitCode = code;
  return typeof process.exitCode === 'number' ? process.exitCode : code;
}

/**
 * A stdout that cannot take the result (a file on a full disk, `> /dev/full`) fails the write
 * after the command returned, in an 'error' event. oclif's listener rethrows every such error
 * but EPIPE, so the user got node's stack trace and exit 1. Called once oclif is loaded (it adds its
 * listener when its Command class loads), before it prints help or a version, and again by each
 * command: this listener is then the only one, and the failure is one `io` line on stderr, exit 5.
 */
export function guardStdout(): void {
  for (const listener of process.stdout.listeners('error')) {
    if (listener !== onStdoutError) process.stdout.off('error', listener as (err: Error) => void);
  }
  if (!process.stdout.listeners('error').includes(onStdoutError)) process.stdout.on('error', onStdoutError);
}

export function writeStderr(text: string): void {
  process.stderr.write(printableLine(text));
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
  const error: ErrorEnvelope['error'] = { type: err.type, code: err.code, message: printableWords(err.message) };
  if (err.hint !== undefined) error.hint = printableWords(err.hint);
  if (err.detail !== undefined) error.detail = err.detail;
  return { ok: false, error };
}

/** A failure in text mode: `error:` and `hint:` on stderr, stdout untouched. Returns the exit code. */
export function reportErrorText(err: EvermeError): number {
  writeStderr(`error: ${printableWords(err.message)}`);
  if (err.hint) writeStderr(`hint: ${printableWords(err.hint)}`);
  return exitCodeFor(err.type);
}

/**
 * A command's failure, already in the taxonomy: the error envelope on stdout with --json, else the
 * text on stderr; returns the exit code. `thrown` is what was caught, whose stack EVERME_DEBUG shows
 * for a defect (`internal`), never for a user's mistake.
 */
export function reportFailure(failure: EvermeError, json: boolean, thrown: unknown): number {
  // Not on stdout, which is what failed; said once, however many writes met it.
  if (failure.code === 'stdout_unwritable') return reportStdoutUnwritable(failure);
  if (failure.type === 'internal' && process.env.EVERME_DEBUG) {
    process.stderr.write(`${thrown instanceof Error ? (thrown.stack ?? String(thrown)) : String(thrown)}\n`);
  }
  if (!json) return reportErrorText(failure);
  writeJson(errorEnvelope(failure));
  return exitCodeFor(failure.type);
}
