/**
 * Preloaded (NODE_OPTIONS=--import) into a CLI and every node it starts: each process appends its
 * peak resident set size at exit to PEAK_RSS_LOG, one JSON line, with whether it was the heap-capped
 * child (EVERME_HEAP_CAPPED=1). A test then reads the peak of the process that did the work, not of
 * the one that only waited for it. A process killed outright (say, out of memory) writes nothing.
 */
import fs from 'node:fs';

process.on('exit', () => {
  const log = process.env.PEAK_RSS_LOG;
  if (!log) return;
  const line = { pid: process.pid, capped: process.env.EVERME_HEAP_CAPPED === '1', maxRssKb: process.resourceUsage().maxRSS };
  fs.appendFileSync(log, `${JSON.stringify(line)}\n`);
});
