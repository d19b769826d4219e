// The closing line of .ci/run: passed, failed and skipped tests from vitest's JSON report. A test
// that was skipped (it.skip, skipIf/runIf whose condition held, todo) and is not listed in
// .ci/expected-skips fails the run: a skip nobody expected is a test that silently stopped running.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const report = JSON.parse(fs.readFileSync(path.join(root, '.vitest-results.json'), 'utf8'));
const expected = new Set(
  fs
    .readFileSync(path.join(root, '.ci', 'expected-skips'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#')),
);

const skipped = [];
for (const file of report.testResults) {
  const rel = path.relative(root, file.name);
  for (const test of file.assertionResults) {
    if (test.status === 'passed' || test.status === 'failed') continue;
    skipped.push(`${rel} > ${[...test.ancestorTitles, test.title].join(' > ')}`);
  }
}
const unexpected = skipped.filter((name) => !expected.has(name));
const skippedCount = report.numPendingTests + report.numTodoTests;
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skippedCount} skipped (${skippedCount - unexpected.length} expected)`);
if (skipped.length !== skippedCount) {
  console.log(`the report counts ${skippedCount} skipped tests but lists ${skipped.length}`);
  process.exitCode = 1;
}
if (unexpected.length > 0) {
  console.log(`unexpected skips (list them in .ci/expected-skips if they are meant):\n${unexpected.map((n) => `  ${n}`).join('\n')}`);
  process.exitCode = 1;
}
if (report.numFailedTests > 0) process.exitCode = 1;
