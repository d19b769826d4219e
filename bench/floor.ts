import { createReadStream, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** The floor: walk the same tree and JSON.parse every line of every history file, nothing else. */
async function main(root: string): Promise<void> {
  const started = performance.now();
  let lines = 0;
  let bytes = 0;
  const walk = async (dir: string): Promise<void> => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.name === 'messages.jsonl' || entry.name === 'ledger.jsonl') {
        bytes += statSync(full).size;
        const rl = createInterface({ input: createReadStream(full), crlfDelay: Infinity });
        for await (const line of rl) {
          if (line) {
            JSON.parse(line);
            lines++;
          }
        }
      }
    }
  };
  await walk(path.join(root, 'v2', 'sessions'));
  process.stdout.write(
    `${JSON.stringify({ ms: performance.now() - started, lines, bytes, maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`,
  );
}

void main(process.argv[2]!);
