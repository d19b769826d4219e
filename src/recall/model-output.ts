/**
 * The one way out to the model. Everything everme hands an agent (the SessionStart context, every
 * MCP tool's answer: mem_search, mem_context, mem_get, mem_timeline, and any tool added later)
 * leaves through `toModel` (and its structured content through `toModelData`),
 * after all rendering and highlighting: credentials the store or the gateway may hold are masked,
 * markup and invisible characters are defused, and the answer is framed as one recall block
 * (memory/recall-block.ts) whose last line stored text cannot fake, so the host's wrapper cannot
 * be closed from inside and what the host stores back can be found and removed.
 */
import { redactOutput } from '../core/redact-output.js';
import { RECALL_BLOCK_END, RECALL_BLOCK_START } from '../memory/recall-block.js';
import { neutraliseRetrieved } from './neutralise.js';

/** What the frame adds after a rendered answer: renderers with a budget keep this much room. */
export const RECALL_FRAME_RESERVE = RECALL_BLOCK_END.length + 2;

/**
 * A rendered answer, ready for the model. Renderers start their answers with the block's first line
 * (`DATA_PREFACE`); an answer that does not gets it. Idempotent on its own output's body.
 */
export function toModel(rendered: string): string {
  const body = rendered.startsWith(RECALL_BLOCK_START) ? rendered.slice(RECALL_BLOCK_START.length) : `\n\n${rendered}`;
  return `${RECALL_BLOCK_START}${neutraliseRetrieved(redactOutput(body))}\n\n${RECALL_BLOCK_END}`;
}

/**
 * Structured content (MCP `structuredContent`), for the model too: every string masked and
 * neutralised like the text, keys and shape kept, no frame (it is data a client reads by field).
 */
export function toModelData<T>(value: T): T {
  if (typeof value === 'string') return neutraliseRetrieved(redactOutput(value)) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => toModelData(item)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toModelData(v as unknown)])) as T;
  }
  return value;
}
