/**
 * The hand-written secret rules (src/core/secret-rules.ts) against secretlint's recommended
 * preset (@secretlint/core + @secretlint/secretlint-rule-preset-recommend), on the secret suite
 * (bench/secret-suite.ts: one credential and one look-alike per rule, the pairs, a split key,
 * benign text, and a few kinds only secretlint names) and on throughput over the bench corpus's
 * texts, in one process so the ratio holds on a busy machine.
 *
 * secretlint is not a dependency (see README, "Secrets"): install it next to the repo to run this,
 *   npm install --no-save @secretlint/core @secretlint/secretlint-rule-preset-recommend
 * or point SECRETLINT_DIR at a directory whose node_modules hold it.
 *
 *   node dist/bench/secretlint-compare.js [corpus root] [max texts]
 */
import { createReadStream, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { redactText } from '../src/core/redact.js';
import { SECRET_RULES } from '../src/core/secret-rules.js';
import { AN, rnd, SECRET_CASES } from './secret-suite.js';
import { repo } from './repo-root.js';

interface LintMessage {
  ruleId: string;
  range: [number, number];
}
interface SecretlintCore {
  lintSource(args: {
    source: { content: string; filePath: string; contentType: 'text' };
    options: { config: { rules: Array<{ id: string; rule: unknown }> }; noPhysicFilePath: boolean };
  }): Promise<{ messages: LintMessage[] }>;
}
interface SecretlintPreset {
  creator: unknown;
  rules: Array<{ meta: { id: string } }>;
}

async function loadSecretlint(): Promise<{ core: SecretlintCore; preset: SecretlintPreset; version: string } | undefined> {
  const base = process.env.SECRETLINT_DIR ?? repo;
  const require = createRequire(path.join(base, 'noop.js'));
  try {
    const core = (await import(pathToFileURL(require.resolve('@secretlint/core')).href)) as SecretlintCore;
    const preset = (await import(pathToFileURL(require.resolve('@secretlint/secretlint-rule-preset-recommend')).href)) as SecretlintPreset;
    const pkg = require('@secretlint/core/package.json') as { version: string };
    return { core, preset, version: pkg.version };
  } catch {
    return undefined;
  }
}

/** Secretlint's findings in a text, as [start, end) ranges. */
type Detector = (text: string) => Promise<Array<[number, number]>>;

/** Whether `secret` (at each place it occurs in `text`) is covered by a finding. */
function covered(text: string, secret: string, ranges: Array<[number, number]>): boolean {
  for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) {
    if (!ranges.some(([s, e]) => s < at + secret.length && e > at)) return false;
  }
  return true;
}

interface SuiteCase {
  name: string;
  text: string;
  /** What must be masked or flagged; empty for text that must come through untouched. */
  secrets: string[];
}

function suite(): SuiteCase[] {
  const cases: SuiteCase[] = [];
  for (const [id, c] of Object.entries(SECRET_CASES)) {
    cases.push({ name: `${id} (credential)`, text: c.positive, secrets: [c.secret] });
    cases.push({ name: `${id} (look-alike)`, text: c.negative, secrets: [] });
  }
  const key = `sk-proj-${rnd(AN, 60)}3x`;
  cases.push(
    { name: 'openai key split by a line break', text: `${key.slice(0, 30)}\n${key.slice(30)}`, secrets: [key.slice(8, 30), key.slice(30)] },
    {
      name: 'benign text',
      text: 'commit 3f9c2a7d41e84b0c9d5a6e1f7b2c8d40aa11bb22\nsha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\nnpm install lodash; mkdir -p a/b\nconst key = await getKey();',
      secrets: [],
    },
  );
  return cases;
}

interface Score {
  caught: number;
  missed: string[];
  falseAlarms: string[];
}

async function score(detect: Detector): Promise<Score> {
  const result: Score = { caught: 0, missed: [], falseAlarms: [] };
  for (const c of suite()) {
    const ranges = await detect(c.text);
    if (c.secrets.length === 0) {
      if (ranges.length > 0) result.falseAlarms.push(c.name);
    } else if (c.secrets.every((s) => covered(c.text, s, ranges))) result.caught++;
    else result.missed.push(c.name);
  }
  return result;
}

/** Ours: a secret counts as caught when it is gone from the masked text (masking changes lengths, so there are no ranges). */
function oursScore(): Score {
  const result: Score = { caught: 0, missed: [], falseAlarms: [] };
  for (const c of suite()) {
    const masked = redactText(c.text);
    if (c.secrets.length === 0) {
      if (masked !== c.text) result.falseAlarms.push(c.name);
    } else if (c.secrets.every((s) => !masked.includes(s))) result.caught++;
    else result.missed.push(c.name);
  }
  return result;
}

async function corpusTexts(root: string, max: number): Promise<string[]> {
  const texts: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (texts.length >= max) return;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.name === 'messages.jsonl') {
        const rl = createInterface({ input: createReadStream(full), crlfDelay: Infinity });
        for await (const line of rl) {
          if (!line) continue;
          const message = (JSON.parse(line) as { message?: { content?: unknown } }).message;
          const content = message?.content;
          if (typeof content === 'string') texts.push(content);
          else if (Array.isArray(content)) {
            for (const block of content as Array<Record<string, unknown>>) if (typeof block.text === 'string') texts.push(block.text);
          }
        }
      }
    }
  };
  await walk(path.join(root, 'v2', 'sessions'));
  return texts.slice(0, max);
}

async function main(): Promise<void> {
  const [root, maxArg] = process.argv.slice(2);
  const secretlint = await loadSecretlint();
  const lines: string[] = [];
  const ourScore = oursScore();
  const total = suite().filter((c) => c.secrets.length > 0).length;
  const negatives = suite().length - total;
  lines.push(`hand-written rules (${SECRET_RULES.length}): ${ourScore.caught}/${total} credentials, ${ourScore.falseAlarms.length}/${negatives} false alarms`);
  if (ourScore.missed.length) lines.push(`  missed: ${ourScore.missed.join(', ')}`);
  if (ourScore.falseAlarms.length) lines.push(`  false alarms: ${ourScore.falseAlarms.join(', ')}`);
  if (!secretlint) {
    lines.push('secretlint: not installed (npm install --no-save @secretlint/core @secretlint/secretlint-rule-preset-recommend), comparison skipped');
    process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ ours: ourScore })}\n`);
    return;
  }
  const config = { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: secretlint.preset.creator }] };
  const lint: Detector = async (content) => {
    const result = await secretlint.core.lintSource({ source: { content, filePath: '/memory.txt', contentType: 'text' }, options: { config, noPhysicFilePath: true } });
    return result.messages.map((m) => m.range);
  };
  const theirs = await score(lint);
  lines.push(`secretlint ${secretlint.version} recommended preset (${secretlint.preset.rules.length} rules): ${theirs.caught}/${total} credentials, ${theirs.falseAlarms.length}/${negatives} false alarms`);
  lines.push(`  missed: ${theirs.missed.join(', ')}`);
  if (theirs.falseAlarms.length) lines.push(`  false alarms: ${theirs.falseAlarms.join(', ')}`);

  if (root) {
    const texts = await corpusTexts(root, Number(maxArg ?? 20_000));
    const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
    // CPU time, in one process, one after the other: the ratio holds on a machine others share.
    const cpuMs = async (run: () => Promise<void> | void): Promise<number> => {
      const start = process.cpuUsage();
      await run();
      const used = process.cpuUsage(start);
      return (used.user + used.system) / 1000;
    };
    for (const t of texts.slice(0, 500)) redactText(t);
    const oursMs = await cpuMs(() => {
      for (const t of texts) redactText(t);
    });
    for (const t of texts.slice(0, 200)) await lint(t);
    const theirMs = await cpuMs(async () => {
      for (const t of texts) {
        await lint(t);
        // secretlint's profiler marks every rule run in the global performance buffer: cleared, or
        // the buffer's growth (a million entries by the end) is counted against it.
        performance.clearMarks();
        performance.clearMeasures();
      }
    });
    const mib = bytes / 1024 / 1024;
    lines.push(`CPU over ${texts.length} corpus texts (${mib.toFixed(1)} MiB): hand-written ${oursMs.toFixed(0)} ms (${(mib / (oursMs / 1000)).toFixed(1)} MiB/s), secretlint ${theirMs.toFixed(0)} ms (${(mib / (theirMs / 1000)).toFixed(1)} MiB/s), ${(theirMs / oursMs).toFixed(1)}x`);
    process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ oursMs, theirMs, bytes, texts: texts.length, ours: ourScore, theirs })}\n`);
    return;
  }
  process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ ours: ourScore, theirs })}\n`);
}

// secretlint leaves handles open (its profiler), so the process is ended once the report is out.
main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exit(1);
  },
);
