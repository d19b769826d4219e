#!/usr/bin/env node
// The hook runs on every tool call the agent makes: it skips oclif (and SQLite) entirely.
if (process.argv[2] === 'hook') {
  const { runHookFromProcess } = await import('../dist/src/hook/hook-entry.js');
  await runHookFromProcess();
} else {
  const { execute } = await import('@oclif/core');
  await execute({ dir: import.meta.url });
}
