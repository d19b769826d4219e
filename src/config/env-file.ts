import { readFileSync, statSync } from 'node:fs';

const ASSIGNMENT = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$/;
/** A value in matching quotes: it ends at the first closing quote that only a comment or blanks follow. */
const QUOTED = /^\s*(['"])(.*?)\1(?:\s+#.*)?$/;
/** Whitespace then `#`: where a comment starts after an unquoted value. */
const INLINE_COMMENT = /\s#/;

/**
 * The value of one assignment, as dotenv and the shell read it. The EverMe reference
 * (everme-gateway.md, "Credentials as EverMe's own installer writes them") says nothing about
 * inline comments, and hand-edited files carry them (`EVERME_AGENT_ID=agt_1  # this machine`),
 * so they follow those semantics rather than ending up in a token sent as a Bearer header:
 * a quoted value ends at its closing quote, and after it whitespace + `# …` is dropped; in an
 * unquoted value whitespace + `#` starts a comment, while a `#` inside a word (`a#b`, `=#x`) is
 * kept, as in the shell.
 */
function assignedValue(raw: string): string {
  const quoted = QUOTED.exec(raw);
  if (quoted) return quoted[2] ?? '';
  const comment = INLINE_COMMENT.exec(raw);
  return (comment ? raw.slice(0, comment.index) : raw).trim();
}

/** Parses the dotenv-style `<data>/everme.env`: KEY=VALUE lines, `#` comments, optional quotes. */
export function parseEnvText(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith('#')) continue;
    const [, key, raw] = ASSIGNMENT.exec(line) ?? [];
    if (key === undefined || raw === undefined) continue;
    values.set(key, assignedValue(raw));
  }
  return values;
}

/**
 * Why `<data>/everme.env` cannot be used as the settings file, or undefined when it is a file or
 * absent. Reading a directory there fails with an EISDIR that names no path; the callers say which.
 */
export function envFileProblem(file: string): string | undefined {
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return `is ${stat.isDirectory() ? 'a directory' : 'not a regular file'}, not a file of KEY=VALUE lines`;
  } catch {
    // Absent (or unreadable, which the read reports): no problem of this kind.
  }
  return undefined;
}

export function readEnvFile(file: string): Map<string, string> {
  try {
    return parseEnvText(readFileSync(file, 'utf8'));
  } catch {
    return new Map();
  }
}
