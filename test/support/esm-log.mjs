// Preloaded (NODE_OPTIONS=--import) by a test: every ES module file the process resolves is
// appended to ESM_LOG, one file: URL a line (module-log.cjs lists the CommonJS ones). The hooks
// run on node's loader thread, so they write the file themselves, as each module is resolved.
import { register } from 'node:module';

if (process.env.ESM_LOG) register('./esm-log-hooks.mjs', import.meta.url, { data: { log: process.env.ESM_LOG } });
