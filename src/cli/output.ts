import { EvermeError, exitCodeFor } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';

/** stdout carries results only; everything for humans that is not the result goes to stderr. */
export function writeStdout(text: string): void {
  process.stdout.write(redactOutput(text.endsWith('\n') ? text : `${text}\n`));
}

export function writeStderr(text: string): void {
  process.stderr.write(redactOutput(text.endsWith('\n') ? text : `${text}\n`));
}

export function successEnvelope(data: unknown, meta?: Record<string, unknown>): string {
  return JSON.stringify(meta === undefined ? { ok: true, data } : { ok: true, data, meta });
}

export function errorEnvelope(err: EvermeError): string {
  const error: Record<string, unknown> = { type: err.type, code: err.code, message: err.message };
  if (err.hint !== undefined) error.hint = err.hint;
  if (err.detail !== undefined) error.detail = err.detail;
  return JSON.stringify({ ok: false, error });
}

/** Prints a failure the way the contract asks and returns the exit code to use. */
export function reportError(err: EvermeError, json: boolean): number {
  if (json) {
    writeStdout(errorEnvelope(err));
  } else {
    writeStderr(`error: ${err.message}`);
    if (err.hint) writeStderr(`hint: ${err.hint}`);
  }
  return exitCodeFor(err.type);
}
