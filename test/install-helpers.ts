import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, lstatSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { tempDir as makeTempDir } from './support/temp.js';

export function tempDir(prefix = 'everme-install-'): string {
  return makeTempDir(prefix);
}

/** Every file, directory and symlink under `root`, with content hash (or link target) and permission bits: equal maps mean equal trees. */
export function hashTree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(root, rel)).sort()) {
      const childRel = rel ? path.join(rel, name) : name;
      const abs = path.join(root, childRel);
      const st = lstatSync(abs);
      const mode = (st.mode & 0o777).toString(8);
      if (st.isSymbolicLink()) {
        out.set(childRel, `link ${readlinkSync(abs)}`);
      } else if (st.isDirectory()) {
        out.set(`${childRel}/`, `dir ${mode}`);
        walk(childRel);
      } else {
        out.set(childRel, `${mode} ${createHash('sha256').update(readFileSync(abs)).digest('hex')}`);
      }
    }
  };
  walk('');
  return out;
}

/** Files (relative paths) under `root` whose bytes contain `needle`. */
export function filesContaining(root: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(root, rel))) {
      const childRel = rel ? path.join(rel, name) : name;
      const st = lstatSync(path.join(root, childRel));
      if (st.isDirectory()) walk(childRel);
      else if (st.isFile() && readFileSync(path.join(root, childRel)).includes(needle)) found.push(childRel);
    }
  };
  walk('');
  return found;
}

function writeJson(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function pkg(dir: string, name: string, extra: Record<string, unknown> = {}): void {
  writeJson(path.join(dir, 'package.json'), { name, version: '1.0.0', main: 'index.js', ...extra });
  writeFileSync(path.join(dir, 'index.js'), `export const name = ${JSON.stringify(name)};\n`);
}

/**
 * A small stand-in for an installed everme package, shaped like npm lays packages out:
 * `alpha` (a dependency) needs `beta` hoisted and its own nested `gamma@2`, while `gamma@1` sits
 * at the top for `beta`; `alpha` ships typings and a source map; `native` has native-build leftovers; `devonly` is a devDependency;
 * an optional dependency is not installed.
 */
export function makeFakePackage(root: string, version = '9.9.9'): void {
  writeJson(path.join(root, 'package.json'), {
    name: '@everme/minimaxcode',
    version,
    type: 'module',
    dependencies: { alpha: '1', '@scope/native': '1' },
    optionalDependencies: { 'not-installed': '1' },
    devDependencies: { devonly: '1' },
  });
  mkdirSync(path.join(root, 'bin'), { recursive: true });
  writeFileSync(path.join(root, 'bin', 'run.js'), '#!/usr/bin/env node\nconsole.log("fake everme");\n');
  chmodSync(path.join(root, 'bin', 'run.js'), 0o755);
  mkdirSync(path.join(root, 'dist', 'src'), { recursive: true });
  writeFileSync(path.join(root, 'dist', 'src', 'main.js'), 'export {};\n');
  writeFileSync(path.join(root, 'oclif.manifest.json'), '{"version":"9.9.9","commands":{}}\n');
  mkdirSync(path.join(root, 'src'), { recursive: true });
  writeFileSync(path.join(root, 'src', 'main.ts'), 'export {};\n');
  writeFileSync(path.join(root, 'tsconfig.json'), '{}\n');

  const nm = path.join(root, 'node_modules');
  pkg(path.join(nm, 'alpha'), 'alpha', { dependencies: { beta: '1', gamma: '2' } });
  pkg(path.join(nm, 'alpha', 'node_modules', 'gamma'), 'gamma', { version: '2.0.0' });
  writeFileSync(path.join(nm, 'alpha', 'index.d.ts'), 'export declare const name: string;\n');
  writeFileSync(path.join(nm, 'alpha', 'index.js.map'), '{}');
  pkg(path.join(nm, 'beta'), 'beta', { dependencies: { gamma: '1' }, peerDependencies: { 'absent-peer': '1' } });
  pkg(path.join(nm, 'gamma'), 'gamma');
  pkg(path.join(nm, '@scope', 'native'), '@scope/native');
  writeFileSync(path.join(nm, '@scope', 'native', 'binding.gyp'), '{}\n');
  mkdirSync(path.join(nm, '@scope', 'native', 'build', 'Release', 'obj.target'), { recursive: true });
  writeFileSync(path.join(nm, '@scope', 'native', 'build', 'Release', 'addon.node'), 'ELF');
  writeFileSync(path.join(nm, '@scope', 'native', 'build', 'Release', 'obj.target', 'addon.o'), 'object');
  writeFileSync(path.join(nm, '@scope', 'native', 'build', 'Makefile'), 'all:\n');
  mkdirSync(path.join(nm, '@scope', 'native', 'deps'), { recursive: true });
  writeFileSync(path.join(nm, '@scope', 'native', 'deps', 'sqlite3.c'), 'int main;\n');
  pkg(path.join(nm, 'devonly'), 'devonly');
  mkdirSync(path.join(nm, '.bin'), { recursive: true });
  symlinkSync('../devonly/index.js', path.join(nm, '.bin', 'devonly'));
}
