/**
 * Retrieved memory goes back into an agent's context, where stored text could pose as structure: a
 * `</tool_response>` that seems to end the tool's answer, a `<system>` block, a chat-template token
 * (`<|im_start|>system`), the host's own `</plugin-hook-context>` that would end the SessionStart
 * wrapper early, or characters that render one way and read another (bidi overrides, zero-width
 * and tag characters). Such markup is defused by swapping its angle brackets for the look-alike
 * `‹ ›`, and invisible controls are removed: a reader still sees what was stored, a model no longer
 * sees a block boundary.
 *
 * It runs on the finished answer, after search highlighting, so it recognises markup with the
 * highlighter's `**` (or any markdown emphasis) inside it: `<**system**>` is a tag too.
 */
import { END_PHRASE, START_PHRASE } from '../memory/recall-block.js';

/**
 * Bidi embeddings, overrides and isolates; zero-width and word-joiner characters; the BOM; the
 * soft hyphen; Unicode tag characters (invisible ASCII look-alikes); C0 and C1 controls other than
 * tab and newline.
 */
const INVISIBLE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\u{E0000}-\u{E007F}]/gu;

/** Markdown emphasis a highlighter or a writer may put inside markup. */
const EMPHASIS = '[*_~`]';
const EMPHASIS_RUN = /[*_~`]/g;

/** Chat-template special tokens: `<|im_start|>`, `<|endoftext|>`, `<｜tool▁call｜>` and the like. */
const SPECIAL_TOKEN = /<([|｜])([^<>\n]{0,64}?)([|｜])>/gu;

/** Llama-style markers, emphasis allowed around their words. */
const LLAMA_MARKER = new RegExp(`<<(${EMPHASIS}*/?${EMPHASIS}*SYS${EMPHASIS}*)>>|\\[(${EMPHASIS}*/?${EMPHASIS}*INST${EMPHASIS}*)\\]`, 'g');

/**
 * A tag (opening, closing, self-closing, or cut off by a snippet's end) whose name says it frames a
 * turn, a tool exchange, instructions or a hook's context. Ordinary tags in code and HTML (`<div>`,
 * `Array<string>`) are left alone. Whitespace (line breaks too) and emphasis may sit between `<`,
 * `/` and the name.
 */
const BLOCK_TAG = /<([\s/*_~`]{0,16})([A-Za-z*_~`][\w:.*~`-]{0,80})([^<>]{0,256})(>?)/g;
const BLOCK_NAME =
  /system|tool|function|assistant|user|human|antml|invoke|parameter|instruction|prompt|im_|reminder|result|response|thinking|context|document|memory|command|message|turn|role|plugin|hook/i;

/** The recall block's own first and last lines (memory/recall-block.ts): stored text may not pose as either. */
const BLOCK_LINES = [START_PHRASE, END_PHRASE];
/** Joins the words of a defused phrase: it reads the same, and no longer matches the phrase. */
const WORD_JOINER = '‐';

export function neutraliseRetrieved(text: string): string {
  let out = text.replace(INVISIBLE, '');
  for (const phrase of BLOCK_LINES) out = out.replace(phrase, (m) => m.split(/\s+/u).join(WORD_JOINER));
  if (!out.includes('<') && !out.includes('[')) return out;
  out = out.replace(SPECIAL_TOKEN, (_m, open: string, body: string, close: string) => `‹${open}${body}${close}›`);
  out = out.replace(LLAMA_MARKER, (_m, sys: string | undefined, inst: string | undefined) => (sys !== undefined ? `‹‹${sys}››` : `⟦${inst ?? ''}⟧`));
  out = out.replace(BLOCK_TAG, (m: string, lead: string, name: string, rest: string, close: string) =>
    BLOCK_NAME.test(name.replace(EMPHASIS_RUN, '')) ? `‹${lead}${name}${rest}${close === '>' ? '›' : ''}` : m,
  );
  return out;
}
