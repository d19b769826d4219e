import type * as z from 'zod';

/**
 * JSON text read through its schema: text that is not JSON and JSON of another shape both give
 * undefined. For lines, columns and bodies written by another build or program, where one bad value
 * is skipped, not thrown.
 */
export function parseJsonAs<T extends z.ZodType>(text: string, schema: T): z.infer<T> | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** Type guards for values that came out of `JSON.parse` (or any other untyped source). */

/** A non-null, non-array object: the shape a JSON object parses to. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A record made by an object literal or `JSON.parse` (prototype Object or null): class instances,
 * Maps and Dates are not walked into or treated as tool arguments.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
