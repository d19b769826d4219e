// Runs the built CLI's arguments through oclif alone, as bin/run.js does for every command but the
// hook and the `sync` runs src/cli/sync-entry.ts takes: what that entry must print the same as.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { execute } = await import(pathToFileURL(path.join(repo, 'dist', 'src', 'cli', 'oclif-main.js')).href);
// The package's directory, as bin/run.js passes it: from bin/ oclif would stop at bin/package.json.
await execute({ dir: repo });
