/**
 * Mutation proof for the safety rules: breaks each guarded rule in turn, in a throwaway copy of the
 * checkout, runs the tests that guard it, and prints which tests caught the break. A rule no test
 * catches, or a break that no longer applies to the code, fails the script.
 *
 *   npm run build && node dist/bench/mutation-proof.js [--only RULE] [--keep]
 *
 * Each break is a small edit: an exact piece of source (its anchor) replaced by a broken one. An
 * anchor that is not found exactly once (someone rewrote that code) stops the script with the rule's
 * name and the file: rewrite the break for the new code rather than drop the row.
 *
 * The copy is `<tmp>/everme-mutation-*` (sources, tests, fixtures; node_modules linked), removed at
 * the end. Its test runs rebuild its dist/ whenever a break changed src/ (test/global-setup.ts), so
 * the end-to-end tests spawn the broken CLI, not the intact one.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repo } from './repo-root.js';

interface Edit {
  /** Exact source text, found exactly once in the file. */
  anchor: string;
  /** What it becomes in the broken copy. */
  broken: string;
}

export interface Mutation {
  rule: string;
  /** How the rule is broken, in a few words. */
  how: string;
  file: string;
  edits: Edit[];
  /** The test files that guard the rule. */
  tests: string[];
}

/** A statement added at the start of a function body: the anchor is the line that opens it. */
function bodyStartsWith(signature: string, statement: string): Edit {
  return { anchor: signature, broken: `${signature}\n    ${statement} // mutation-proof` };
}

export const MUTATIONS: Mutation[] = [
  {
    rule: 'session lock',
    how: 'SessionLocks.acquire returns at once, holding nothing',
    file: 'src/engine/session-lock.ts',
    edits: [bodyStartsWith('  async acquire(sessionId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {', 'if (sessionId) return;')],
    tests: ['test/delivery-locks.test.ts'],
  },
  {
    rule: 'mark moves only after the ack',
    how: 'the gateway sink records the keys delivered before the gateway answered',
    file: 'src/sinks/gateway/gateway-sink.ts',
    edits: [
      {
        anchor: '    const ack = await this.client.postAgentMemory(',
        broken: '    this.stores.keys.record(NAME, conversationId, request.keys); // mutation-proof\n    const ack = await this.client.postAgentMemory(',
      },
    ],
    tests: ['test/delivery-failures.test.ts', 'test/gateway-ambiguous-answers.test.ts'],
  },
  {
    rule: 'redaction',
    how: 'redactText returns the text unmasked',
    file: 'src/core/redact.ts',
    edits: [bodyStartsWith('export function redactText(input: string): string {', 'if (input.length >= 0) return input;')],
    tests: ['test/memory-redact.test.ts', 'test/secrets-e2e.test.ts'],
  },
  {
    rule: 'private-span gate',
    how: 'PrivateSpans.text hides nothing',
    file: 'src/core/private-spans.ts',
    edits: [bodyStartsWith('  text(raw: string): string {', 'if (raw.length >= 0) return raw;')],
    tests: ['test/memory-private-spans.test.ts', 'test/private-spans-e2e.test.ts', 'test/privacy-gate-turn.test.ts'],
  },
  {
    rule: 'exclusion',
    how: 'ExclusionPolicy.ruleFor excludes no workspace',
    file: 'src/config/exclude.ts',
    edits: [bodyStartsWith('  ruleFor(workspace: string): ExclusionRule | undefined {', 'if (workspace) return undefined;')],
    tests: ['test/exclude-policy.test.ts', 'test/exclude-e2e.test.ts'],
  },
  {
    rule: 'forget tombstone',
    how: 'no conversation reads as forgotten',
    file: 'src/store/tombstones.ts',
    edits: [
      // Not `if (this.stmts)`: TypeScript then narrows stmts to never below and the copy fails to build.
      bodyStartsWith('  forgottenIds(): Set<string> {', 'if (Date.now() > 0) return new Set();'),
      bodyStartsWith('  isForgotten(conversationId: string): boolean {', 'if (conversationId) return false;'),
    ],
    tests: ['test/forget-e2e.test.ts'],
  },
  {
    rule: "viewer's Host check",
    how: 'the viewer answers any Host header',
    file: 'src/ui/guard.ts',
    edits: [{ anchor: "    if (c.req.header('host') !== host) return deny(", broken: "    if (c.req.header('host') !== host && !host) return deny(" }],
    tests: ['test/ui-http.test.ts'],
  },
  {
    rule: "viewer's secret check",
    how: 'the viewer serves and changes without the launch secret',
    file: 'src/ui/guard.ts',
    edits: [
      { anchor: '    if (!underPrefix(c.req.path, opts.secret)) return deny(c, 401,', broken: '    if (!underPrefix(c.req.path, opts.secret) && !opts.secret) return deny(c, 401,' },
      { anchor: '      if (!same(await explicitSecret(c), opts.secret)) return deny(c, 403,', broken: '      if (!same(await explicitSecret(c), opts.secret) && !opts.secret) return deny(c, 403,' },
    ],
    tests: ['test/ui-http.test.ts'],
  },
];

/**
 * Every top-level entry but node_modules (linked) and dot entries (.git, reports): a fixed list
 * missed tsconfig.client.json when the viewer added it, and every test run in the copy then failed
 * to build, reporting no test at all.
 */
function copiedEntries(): string[] {
  return fs.readdirSync(repo).filter((name) => name !== 'node_modules' && !name.startsWith('.'));
}

function copyCheckout(): string {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'everme-mutation-'));
  for (const entry of copiedEntries()) {
    const from = path.join(repo, entry);
    if (!fs.existsSync(from)) continue;
    // Timestamps kept: a dist/ current in the checkout is current in the copy (no first rebuild).
    fs.cpSync(from, path.join(copy, entry), {
      recursive: true,
      preserveTimestamps: true,
      filter: (src) => !src.includes(`${path.sep}.corpus`) && !src.endsWith('.vitest-results.json'),
    });
  }
  fs.symlinkSync(path.join(repo, 'node_modules'), path.join(copy, 'node_modules'));
  return copy;
}

/**
 * The broken text of a mutation's file under `root`; throws, naming the rule, when the file is gone
 * or an anchor is not there exactly once (test/mutation-anchors.test.ts runs this on every test run,
 * so a refactor that moves an anchor fails there, loudly, not here weeks later).
 */
export function brokenText(root: string, m: Mutation): { original: string; broken: string } {
  const file = path.join(root, m.file);
  if (!fs.existsSync(file)) throw new Error(`${m.rule}: ${m.file} does not exist any more: rewrite this break in bench/mutation-proof.ts for the new code`);
  const original = fs.readFileSync(file, 'utf8');
  let text = original;
  for (const edit of m.edits) {
    const count = text.split(edit.anchor).length - 1;
    if (count !== 1) {
      throw new Error(`${m.rule}: the anchor occurs ${count} times in ${m.file} (expected once): rewrite this break in bench/mutation-proof.ts for the new code\n  anchor: ${edit.anchor}`);
    }
    text = text.replace(edit.anchor, edit.broken);
  }
  return { original, broken: text };
}

/** Applies a mutation's edits to the copy; returns the file's original text. */
function apply(copy: string, m: Mutation): string {
  const { original, broken } = brokenText(copy, m);
  fs.writeFileSync(path.join(copy, m.file), broken);
  return original;
}

interface Outcome {
  passed: number;
  failed: string[];
  /** Set when the run ended without a report (a crash, a timeout). */
  error?: string;
}

interface JsonReport {
  numTotalTests: number;
  numPassedTests: number;
  testResults: Array<{ name: string; assertionResults: Array<{ ancestorTitles: string[]; title: string; status: string }> }>;
}

function runTests(copy: string, files: string[]): Outcome {
  const out = path.join(copy, '.mutation-result.json');
  fs.rmSync(out, { force: true });
  const run = spawnSync(process.execPath, [path.join(copy, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...files, '--reporter=json', `--outputFile=${out}`], {
    cwd: copy,
    encoding: 'utf8',
    timeout: 30 * 60_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!fs.existsSync(out)) return { passed: 0, failed: [], error: `no report (exit ${run.status}): ${run.stderr.slice(-2000)}` };
  const report = JSON.parse(fs.readFileSync(out, 'utf8')) as JsonReport;
  // A run that failed before any test ran (the global setup's build, say) reports no test at all.
  if (report.numTotalTests === 0) return { passed: 0, failed: [], error: `no test ran (exit ${run.status}): ${(run.stdout + run.stderr).slice(-2000)}` };
  const failed = report.testResults.flatMap((file) =>
    file.assertionResults
      .filter((t) => t.status === 'failed')
      .map((t) => `${path.relative(copy, file.name)} > ${[...t.ancestorTitles, t.title].join(' > ')}`),
  );
  return { passed: report.numPassedTests, failed };
}

function main(): void {
  const args = process.argv.slice(2);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
  const keep = args.includes('--keep');
  const mutations = MUTATIONS.filter((m) => only === undefined || m.rule === only);
  if (mutations.length === 0) throw new Error(`no rule named ${only}; rules: ${MUTATIONS.map((m) => m.rule).join(', ')}`);
  for (const m of mutations) for (const t of m.tests) if (!fs.existsSync(path.join(repo, t))) throw new Error(`${m.rule}: ${t} does not exist`);

  const copy = copyCheckout();
  const started = Date.now();
  try {
    // Every guarding test passes on the intact code first: a failure under a break then means the break.
    const allTests = [...new Set(mutations.flatMap((m) => m.tests))];
    const baseline = runTests(copy, allTests);
    if (baseline.error || baseline.failed.length > 0) {
      throw new Error(`the guarding tests do not pass on the intact code:\n${baseline.error ?? baseline.failed.join('\n')}`);
    }
    process.stderr.write(`baseline: ${baseline.passed} tests pass on the intact code\n`);

    const rows: Array<{ m: Mutation; outcome: Outcome; ms: number }> = [];
    for (const m of mutations) {
      const t0 = Date.now();
      const original = apply(copy, m);
      let outcome: Outcome;
      try {
        outcome = runTests(copy, m.tests);
      } finally {
        fs.writeFileSync(path.join(copy, m.file), original);
      }
      rows.push({ m, outcome, ms: Date.now() - t0 });
      process.stderr.write(`${m.rule}: ${outcome.failed.length} failing test(s) in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
    }

    console.log('| rule | broken by | caught by (failing tests) |');
    console.log('|---|---|---|');
    let missed = 0;
    for (const { m, outcome } of rows) {
      const caught = outcome.failed.length > 0 && !outcome.error;
      if (!caught) missed++;
      const by = caught ? outcome.failed.map((name) => `\`${name}\``).join('<br>') : `**NOT CAUGHT**${outcome.error ? ` (${outcome.error.split('\n')[0]})` : ''}`;
      console.log(`| ${m.rule} | ${m.how} (${m.file}) | ${by} |`);
    }
    console.log(`\n${rows.length - missed} of ${rows.length} rules caught; ${((Date.now() - started) / 1000).toFixed(0)} s in all.`);
    if (missed > 0) process.exitCode = 1;
  } finally {
    if (keep) process.stderr.write(`kept ${copy}\n`);
    else fs.rmSync(copy, { recursive: true, force: true });
  }
}

// Run as a script (not when a test imports MUTATIONS).
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
