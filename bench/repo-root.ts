import { findPackageRoot } from '../src/core/package-root.js';

/**
 * The repository the bench runs in: the directory whose package.json names this package, walking up
 * from package-root.ts's own directory (src/core/, or dist/src/core/ when built: the same checkout
 * as every bench file). Found, not counted: a bench file runs from dist/bench/ (`npm run bench`),
 * from dist/bench/recall/, or from bench/ (the tests import mutation-proof.ts from source), and
 * each file had kept its own count of `..` for where it sat.
 */
export const repo: string = findPackageRoot() ?? failNoRoot();

function failNoRoot(): never {
  throw new Error('bench: no package.json naming this package above src/core/: run the bench from a checkout of the repository');
}
