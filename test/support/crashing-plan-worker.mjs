/**
 * The real plan worker (the built one), which dies the way a crashed thread does (process.exit in
 * a worker thread ends that thread only) at a point a test chooses, for a session the test marked
 * with a file in its directory:
 *   `crash-plan-worker-at-start` — before planning it at all;
 *   `crash-plan-worker-after-part` — once its first part was delivered (marks may have moved).
 * The real worker is loaded first, so its listener is attached before any message flows; this one
 * runs right after it in the same dispatch, and exits before anything the real one started (all of
 * it asynchronous) gets to run.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import '../../dist/src/engine/plan-worker.js';

const afterPart = new Set();
parentPort.on('message', (message) => {
  if (message.kind === 'plan') {
    const dir = message.job.session.dir;
    if (existsSync(path.join(dir, 'crash-plan-worker-at-start'))) process.exit(7);
    if (existsSync(path.join(dir, 'crash-plan-worker-after-part'))) afterPart.add(message.id);
  } else if (message.kind === 'ack' && afterPart.has(message.id)) {
    process.exit(7);
  }
});
