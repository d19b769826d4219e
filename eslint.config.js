// @ts-check
// Lint: typescript-eslint's type-checked rules, plus the layer rule of README.md "Architecture".
import tseslint from 'typescript-eslint';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';

/**
 * The layers, lowest first. A folder may import from its own folder and from any layer below it;
 * never from a layer above, and never from another folder of its own layer (so folders cannot
 * form a cycle). Exceptions between folders of one layer are listed in PEERS_ALLOWED.
 */
export const LAYERS = [
  ['src/core'],
  ['src/config'],
  ['src/store'],
  ['src/transcript', 'src/memory'],
  ['src/sinks'],
  ['src/engine'],
  ['src/recall'],
  ['src/install', 'src/hook', 'src/report', 'src/mcp', 'src/forget', 'src/export'],
  ['src/status'],
  // The viewer shows what the features compute (recall, report, forget, status); it and the CLI's
  // shared parts are peers under the commands, so neither reaches into the other.
  ['src/cli', 'src/ui'],
  ['commands'],
];

/** memory converts what transcript reads: it may use transcript's types (never the reverse). */
const PEERS_ALLOWED = { 'src/memory': ['src/transcript'] };

/** Zones for import-x/no-restricted-paths: for each folder, every folder above it and its peers. */
function layerZones() {
  const zones = [];
  LAYERS.forEach((layer, level) => {
    const above = LAYERS.slice(level + 1).flat();
    for (const target of layer) {
      const allowed = PEERS_ALLOWED[/** @type {keyof typeof PEERS_ALLOWED} */ (target)] ?? [];
      const peers = layer.filter((peer) => peer !== target && !allowed.includes(peer));
      const from = [...above, ...peers];
      if (from.length > 0) {
        zones.push({ target, from, message: `${target} sits below these folders in the layer order (README.md, Architecture).` });
      }
    }
  });
  // Inside sinks/: the Sink interface knows no sink, and the two sinks do not know each other.
  // The viewer's browser script runs in the page: nothing of the server (or of Node) may reach it.
  zones.push(
    { target: 'src/ui/client', from: ['src', 'commands'], except: ['./ui/client'], message: 'src/ui/client runs in the browser: it imports only its own files.' },
    { target: 'src/sinks/sink.ts', from: ['src/sinks/gateway', 'src/sinks/local'], message: 'sink.ts is the interface the sinks implement.' },
    { target: 'src/sinks/gateway', from: ['src/sinks/local'], message: 'The gateway and local sinks are independent.' },
    { target: 'src/sinks/local', from: ['src/sinks/gateway'], message: 'The gateway and local sinks are independent.' },
  );
  return zones;
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'bench/.corpus/', 'fixtures/', 'oclif.manifest.json', 'bin/'] },
  {
    files: ['**/*.ts'],
    // The whole type-checked set (no-unsafe-* and the rest), with the rules below on top.
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      // One program over sources and tests (tsconfig.test.json includes both).
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      // import-x reads (and follows imports through) only these files; without .ts, no-cycle
      // would never look past the file it lints.
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // Sources import each other as `./x.js` (NodeNext); the files on disk are `x.ts`.
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      // Off, the one rule of the set that is: what it finds here are functions async by contract.
      // The transcript readers are async generators consumed with `for await` (the engine, the hook
      // worker, export re-import); several read with synchronous calls inside, which is their
      // implementation, not their interface. Made synchronous, each one turns its callers into
      // async functions without an await in turn, up through the engine (tried: 8 findings became
      // 8 others one level up). oclif's hooks and the MCP SDK's handlers are async by contract too.
      // A missing await where one is needed is what the promise rules below catch.
      '@typescript-eslint/require-await': 'off',
      // The promise rules: a promise nobody awaits loses its error; one passed where a plain
      // callback is expected (an event handler) is never awaited either.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A switch over a union names every member, so a new member is a compile-time to-do list.
      // Switches over a wider type (a string from the wire) keep their `default`.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',

      // The layer order, and no import cycle at all (between folders or files).
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: layerZones() }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // zod's `z` export is its namespace as one object, all its locales included: a bundle that
      // imports it keeps ~0.5 MB every command parses at start. `import * as z` lets it keep only
      // what is used (test/built-commands.test.ts checks the built files).
      'no-restricted-syntax': [
        'error',
        { selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier[imported.name='z']", message: "Use `import * as z from 'zod'`." },
      ],
    },
  },
  {
    // Size (issue #28): no function of the product over 80 lines, counted as written (blank lines
    // and comments too), so a long one is split by concern rather than squeezed.
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80 }] },
  },
  {
    // A command is flags, one call into src/, and a render: 40 lines, its help text included.
    files: ['commands/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 40 }] },
  },
  {
    // The viewer's browser script is its own TypeScript program (DOM, not Node): tsconfig.client.json.
    files: ['src/ui/client/**/*.ts'],
    languageOptions: { parserOptions: { project: './tsconfig.client.json' } },
  },
  {
    // Tests import anything (they reach into every layer), and helpers run once per test.
    files: ['test/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': 'off',
    },
  },
);
