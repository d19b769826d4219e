import { readFileSync } from 'node:fs';

/** Parses the dotenv-style `<data>/everme.env`: KEY=VALUE lines, `#` comments, optional quotes. */
export function parseEnvText(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    const [, key, raw] = match ?? [];
    if (key === undefined || raw === undefined) continue;
    const quoted = /^(['"])(.*)\1$/.exec(raw);
    values.set(key, quoted?.[2] ?? raw);
  }
  return values;
}

export function readEnvFile(file: string): Map<string, string> {
  try {
    return parseEnvText(readFileSync(file, 'utf8'));
  } catch {
    return new Map();
  }
}
