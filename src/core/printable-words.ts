import { redactOutput } from './redact-output.js';
import { redactText } from './redact.js';
import { stripControls } from './terminal-controls.js';

/**
 * An error's words as shown to a person or an agent: they repeat what was typed (`show <id>`, a bad
 * `--since`, a `mem_get` id), and a key pasted there by mistake (`sk-ant-…`, `ghp_…`) is masked by the
 * full rule table, as stored text is, not only by the EverMe-token masking every printed line gets.
 * Word by word: the table's rules that read context (`--api-key <value>`) would take the word after
 * a flag the message names (`--api-key is empty`) for its value. Terminal controls go too. Here in
 * core so the CLI's output (cli/output.ts) and the MCP server's tool errors share one masking.
 */
export function printableWords(text: string): string {
  return stripControls(text).replace(/\S+/g, (word) => redactText(word));
}

/**
 * One line for a terminal or a log, ending in a newline: what the host supplied (a workspace path, a
 * project name) may hold ESC or C1 controls, which would recolour, move or clear the user's terminal,
 * so they go here, where the line is printed (what is stored keeps the path as the host wrote it, so
 * EVERME_EXCLUDE still matches it); then the masking every printed line gets. The CLI's stdout and
 * stderr (cli/output.ts) and the MCP server's own stderr log write through it.
 */
export function printableLine(text: string): string {
  const safe = stripControls(text);
  return redactOutput(safe.endsWith('\n') ? safe : `${safe}\n`);
}
