import { EvermeError, exitCodeFor } from '../core/errors.js';
import { redactOutput } from '../core/redact-output.js';

/** stdout carries results only; everything for humans that is not the result goes to stderr. */
export function writeStdout(text: string): void {
  process.stdout.write(redactOutput(text.endsWith('\n') ? text : `${text}\n`));
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
