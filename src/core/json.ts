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
