/**
 * Preloaded into a CLI process (NODE_OPTIONS=--require) by a test: appends the entry of every
 * worker thread the process starts to the file WORKER_LOG names, so a test can see which threads
 * a bulk run really used (a run that cannot find its thread entries plans and commits inline,
 * correct but slower, and otherwise unseen).
 */
const fs = require('node:fs');
const { syncBuiltinESMExports } = require('node:module');
const workerThreads = require('node:worker_threads');

const Original = workerThreads.Worker;
workerThreads.Worker = class LoggedWorker extends Original {
  constructor(filename, options) {
    if (process.env.WORKER_LOG) fs.appendFileSync(process.env.WORKER_LOG, `${String(filename)}\n`);
    super(filename, options);
  }
};
// ES modules import `Worker` from node:worker_threads too: they see the replacement only after this.
syncBuiltinESMExports();
