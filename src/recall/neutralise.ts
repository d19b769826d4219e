/**
 * Retrieved memory goes back into an agent's context, where stored text could pose as structure: a
 * `</tool_response>` that seems to end the tool's answer, a `<system>` block, a chat-template token
 * (`<|im_start|>system`), or characters that render one way and read another (bidi overrides,
 * zero-width and tag characters). Such markup is defused by swapping its angle brackets for the
 * look-alike `‹ ›`, and invisible controls are removed: a reader still sees what was stored, a model
 * no longer sees a block boundary.
 */

/**
 * Bidi embeddings, overrides and isolates; zero-width and word-joiner characters; the BOM; the
 * soft hyphen; Unicode tag characters (invisible ASCII look-alikes); C0 and C1 controls other than
 * tab and newline.
 */
const INVISIBLE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\u{E0000}-\u{E007F}]/gu;

/** Chat-template special tokens: `<|im_start|>`, `<|endoftext|>`, `<｜tool▁call｜>` and the like. */
const SPECIAL_TOKEN = /<([|｜])([^<>\n]{0,64}?)([|｜])>/gu;

/** Llama-style markers. */
const LLAMA_MARKER = /<<(\/?)SYS>>|\[(\/?)INST\]/g;

/**
 * A tag (opening, closing, self-closing, or cut off by a snippet's end) whose name says it frames a
 * turn, a tool exchange or instructions. Ordinary tags in code and HTML (`<div>`, `Array<string>`)
 * are left alone.
 */
const BLOCK_TAG = /<(\/?[ \t]*)([A-Za-z][\w:.-]{0,63})([^<>\n]{0,256})(>?)/g;
const BLOCK_NAME =
  /system|tool|function|assistant|user|human|antml|invoke|parameter|instruction|prompt|im_|reminder|result|response|thinking|context|document|memory|command|message|turn|role/i;

export function neutraliseRetrieved(text: string): string {
  let out = text.replace(INVISIBLE, '');
  if (!out.includes('<') && !out.includes('[')) return out;
  out = out.replace(SPECIAL_TOKEN, (_m, open: string, body: string, close: string) => `‹${open}${body}${close}›`);
  out = out.replace(LLAMA_MARKER, (m: string, sysSlash: string | undefined, instSlash: string | undefined) =>
    m.startsWith('<<') ? `‹‹${sysSlash ?? ''}SYS››` : `⟦${instSlash ?? ''}INST⟧`,
  );
  out = out.replace(BLOCK_TAG, (m: string, slash: string, name: string, rest: string, close: string) =>
    BLOCK_NAME.test(name) ? `‹${slash}${name}${rest}${close === '>' ? '›' : ''}` : m,
  );
  return out;
}
