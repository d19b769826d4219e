import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cliEntry, ensureBuilt } from './cli.js';
import type { CliResult } from './cli-process.js';

/**
 * Root ignores file permissions, so tests of a permission the CLI meets run it as uid 65534 when
 * they run as root, over a tree that uid owns.
 */
export const asRoot = process.getuid?.() === 0;
export const NOBODY = 65534;

/** Gives the tree at `dir` to uid 65534 (links themselves, never what they point at). */
export function chownTree(dir: string): void {
  fs.lchownSync(dir, NOBODY, NOBODY);
  if (!fs.lstatSync(dir).isDirectory()) return;
  for (const entry of fs.readdirSync(dir)) chownTree(path.join(dir, entry));
}

/** The built CLI with `args`, as uid 65534 when this test runs as root. */
export function runCliAsNobody(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  ensureBuilt();
  const child = spawn(process.execPath, [cliEntry, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}) });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
