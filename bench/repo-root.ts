import { findPackageRoot } from '../src/core/package-root.js';

/**
 * The repository the bench runs in: the directory whose package.json names this package, above
 * this file. Found, not counted: a bench file runs from dist/bench/ (`npm run bench`), from bench/
 * (the tests run mutation-proof.ts from source), or from dist/bench/recall/, and each file had kept
 * its own count of `..` for where it sat.
 */
export const repo: string = findPackageRoot() ?? failNoRoot();

function failNoRoot(): never {
  throw new Error('bench: no package.json naming this package above src/core/: run the bench from a checkout of the repository');
}
