import type * as z from 'zod';

/**
 * A JSON text column read back through its schema: NULL, text that is not JSON, and JSON of
 * another shape all give undefined (a row written by an older or newer build must not throw).
 */
export function parseJsonColumn<T extends z.ZodType>(text: string | null, schema: T): z.infer<T> | undefined {
  if (text === null) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}
