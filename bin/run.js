#!/usr/bin/env node
'use strict';
// CommonJS (bin/package.json says so), unlike the rest of the package: an ES module entry starts
// node's ES module loader, ~8 ms of every hook call, which runs on every tool call the agent makes.
// The hook and `sync` are required as CommonJS bundles; everything else is imported as before.
const path = require('node:path');

// The hook skips oclif entirely (and SQLite, except SessionStart's recall, which loads only the
// store's reader), and loads its modules as one file that `npm run build` bundles (resolving some
// twenty modules one by one cost ~15 ms a call).
async function hook() {
  try {
    const { runHookFromProcess } = require('../dist/src/hook/hook-entry.bundle.cjs');
    await runHookFromProcess();
  } catch {
    // Fail open even when the runtime itself is broken (say, a half-removed install): exit 0 and
    // one short line, never a stack trace, so the agent's tool call goes on.
    process.stderr.on('error', () => undefined);
    process.stderr.write('everme hook: the everme runtime could not start; run `everme install` again\n');
    process.exitCode = 0;
  }
}

async function command() {
  const args = process.argv.slice(2);
  // Only `import` runs in a child node whose heap is capped (see heap-capped.ts; its `wantsHeapCap`
  // checks the command too). heap-capped.js is an ES module: loading it for any other command would
  // start node's ES module loader, which `sync` (required as CommonJS below) never needs.
  const heap = args[0] === 'import' ? await import('../dist/src/cli/heap-capped.js') : undefined;
  const code = heap?.wantsHeapCap(args, process.env, process.execArgv) ? await heap.runHeapCapped(__filename, args) : undefined;
  if (code !== undefined) {
    process.exitCode = code;
    return;
  }
  if (heap && process.env[heap.HEAP_CAPPED_ENV] === '1') heap.exitWithParent();
  // `sync`, which a cron job or a shell prompt runs over and over, starts without oclif unless its
  // arguments need it (help, a mistake): see sync-entry.ts. Its code is one CommonJS file that
  // `npm run build` bundles: required, it starts ~45 ms sooner than as ES modules split in chunks.
  const ran = args[0] === 'sync' && (await require('../dist/src/cli/sync-entry.bundle.cjs').runSyncEntry(args.slice(1)));
  if (ran) {
    // The run is over and nothing is left pending (the store closed, the threads gone): once what
    // was written is flushed, exit rather than let node tear the heap down (~15 ms of a no-op).
    // Flushed is read off the streams, never learnt by writing '' to them: a full device
    // (`> /dev/full`) fails even a write of nothing, which read as lost output after a run that
    // printed nothing there. Output still queued (not on Linux, where stdout and stderr write
    // synchronously) or a stream that failed (stdout on a full disk, whose 'error' handler sets
    // the exit code: see guardStdout) exits the usual way.
    const flushed = (stream) => !stream.destroyed && !stream.errored && stream.writableLength === 0;
    if (flushed(process.stdout) && flushed(process.stderr)) setImmediate(() => process.exit());
    return;
  }
  // oclif as the build bundled it with the commands (one copy, a few files: see oclif-main.ts).
  // Its root is the package's directory: from this file it would stop at bin/package.json.
  const { execute } = await import('../dist/src/cli/oclif-main.js');
  await execute({ dir: path.resolve(__dirname, '..') });
}

void (process.argv[2] === 'hook' ? hook() : command());
