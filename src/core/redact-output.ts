/**
 * Masks credentials in anything printed or logged (the CLI contract's format, which keeps a short
 * prefix so a user can tell which key is meant). Stored and uploaded text is masked separately by
 * src/core/redact.ts with rule-named placeholders.
 */
const EVERME_TOKEN = /\b(evt|emk)_([A-Za-z0-9]{4})([A-Za-z0-9_-]*)/g;
const BEARER = /\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi;
const AWS_KEY_ID = /\b(AKIA|ASIA)[A-Z0-9]{16}\b/g;
const S3_SIGNING = /\b(X-Amz-(?:Signature|Credential|Security-Token))=[^&\s"']+/gi;
/**
 * A URL's password (`https://user:secret@host`): an `EVERME_API_BASE` may carry one, and status, the
 * MCP log and the viewer show the base. The password runs to the LAST `@` of the authority (RFC 3986:
 * the host follows it, and `/`, `?`, `#` end the authority), so one holding a raw `@`
 * (`user:p@ss@host`) is masked whole, as the stored text's `url-password` rule does.
 */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*):[^\s/?#]*@/gi;
/**
 * A credential in a URL's query (`?token=…`, `&access_token=…`, `?key=…`, `&sig=…`): an
 * `EVERME_API_BASE` may carry one too. The names are the stored text's `url-query-secret` rule's;
 * a value that is a variable (`$TOKEN`) or already masked stays.
 */
const URL_QUERY_SECRET = /([?&][A-Za-z0-9_.-]{0,30}?(?:token|key|sig|signature|secret|password|passwd|pwd|credential)=)(?![$[]|REDACTED\b)[^&\s#"'<>]{1,2048}/gi;

/**
 * Prefixes like `sk-` or `evt_` also start ordinary kebab/snake identifiers; a real key is random,
 * so it has a digit or (long enough) both letter cases.
 */
export function looksRandom(text: string): boolean {
  if (/[0-9]/.test(text)) return true;
  return text.length >= 20 && /[a-z]/.test(text) && /[A-Z]/.test(text);
}

/**
 * An `evt_`/`emk_` word is masked when it looks like a key (the stored text's `everme-token` rule):
 * `evt_click` or `evt_dispatcher` in a recalled message is a name the agent needs to read whole.
 */
function maskEvermeToken(word: string, kind: string, head: string, rest: string): string {
  return head.length + rest.length >= 8 && looksRandom(head + rest) ? `${kind}_${head}_REDACTED` : word;
}

export function redactOutput(text: string): string {
  if (!/evt_|emk_|bearer|AKIA|ASIA|X-Amz-|:\/\/[^\s/?#]*@|[?&][\w.-]{0,30}(?:token|key|sig|signature|secret|password|passwd|pwd|credential)=/i.test(text)) return text;
  return text
    .replace(URL_PASSWORD, (_m, head: string) => `${head}:REDACTED@`)
    .replace(URL_QUERY_SECRET, (_m, name: string) => `${name}REDACTED`)
    .replace(EVERME_TOKEN, maskEvermeToken)
    .replace(BEARER, (_m, word: string) => `${word} [REDACTED]`)
    .replace(AWS_KEY_ID, (m) => `${m.slice(0, 4)}_REDACTED`)
    .replace(S3_SIGNING, (_m, name: string) => `${name}=REDACTED`);
}
