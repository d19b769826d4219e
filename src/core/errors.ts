/** The error taxonomy of EverMe's CLI contract; every failure a user can see is one of these. */
export const ERROR_TYPES = [
  'invalid_args',
  'not_logged_in',
  'auth',
  'network',
  'upstream',
  'conflict',
  'not_found',
  'rate_limit',
  'permission',
  'plugin_not_detected',
  'io',
  'internal',
  'cancelled',
] as const;

export type ErrorType = (typeof ERROR_TYPES)[number];

const EXIT_CODES: Record<ErrorType, number> = {
  invalid_args: 2,
  not_logged_in: 3,
  auth: 3,
  network: 4,
  upstream: 1,
  conflict: 1,
  not_found: 1,
  rate_limit: 1,
  permission: 1,
  plugin_not_detected: 1,
  io: 5,
  internal: 5,
  cancelled: 130,
};

export function exitCodeFor(type: ErrorType): number {
  return EXIT_CODES[type];
}

export interface EvermeErrorOptions {
  code?: string;
  hint?: string;
  detail?: Record<string, unknown>;
  cause?: unknown;
}

export class EvermeError extends Error {
  readonly type: ErrorType;
  readonly code: string;
  readonly hint?: string;
  readonly detail?: Record<string, unknown>;

  constructor(type: ErrorType, message: string, options: EvermeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EvermeError';
    this.type = type;
    this.code = options.code ?? type;
    this.hint = options.hint;
    this.detail = options.detail;
  }
}

/** Wraps anything thrown into the taxonomy; unknown failures are `internal`, never a raw stack. */
export function toEvermeError(err: unknown): EvermeError {
  if (err instanceof EvermeError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E(ACCES|PERM|NOENT|NOTDIR|ISDIR|ROFS|NOSPC|EXIST)$/.test(code)) {
    return new EvermeError('io', message, { code: code.toLowerCase(), cause: err });
  }
  return new EvermeError('internal', message, { cause: err });
}

/** An EvermeError as it crosses a thread boundary (a structured clone drops its class). */
export interface EvermeErrorData {
  type: ErrorType;
  code: string;
  message: string;
  hint?: string;
}

export function errorData(error: EvermeError): EvermeErrorData {
  return { type: error.type, code: error.code, message: error.message, ...(error.hint === undefined ? {} : { hint: error.hint }) };
}

export function errorFromData(data: EvermeErrorData): EvermeError {
  return new EvermeError(data.type, data.message, { code: data.code, ...(data.hint === undefined ? {} : { hint: data.hint }) });
}
