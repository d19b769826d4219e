#!/usr/bin/env node
// The hook runs on every tool call the agent makes: it skips oclif entirely (and SQLite, except
// SessionStart's recall, which loads only the store's reader).
if (process.argv[2] === 'hook') {
  try {
    const { runHookFromProcess } = await import('../dist/src/hook/hook-entry.js');
    await runHookFromProcess();
  } catch {
    // Fail open even when the runtime itself is broken (say, a half-removed install): exit 0 and
    // one short line, never a stack trace, so the agent's tool call goes on.
    process.stderr.on('error', () => undefined);
    process.stderr.write('everme hook: the everme runtime could not start; run `everme install` again\n');
    process.exitCode = 0;
  }
} else {
  const { execute } = await import('@oclif/core');
  await execute({ dir: import.meta.url });
}
