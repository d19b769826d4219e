import type * as z from 'zod';
import { parseJsonAs } from '../core/json.js';

/**
 * A JSON text column read back through its schema: NULL, text that is not JSON, and JSON of
 * another shape all give undefined (a row written by an older or newer build must not throw).
 */
export function parseJsonColumn<T extends z.ZodType>(text: string | null, schema: T): z.infer<T> | undefined {
  return text === null ? undefined : parseJsonAs(text, schema);
}
