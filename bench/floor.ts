import { createReadStream, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The floor: walk the same tree and JSON.parse every line of every history file, nothing else.
 * `ms` is the first pass, in a fresh process, as the import runs. With a pass count, the walk is
 * repeated in the same process and `passMs` holds every pass: later ones run with the JIT and the
 * heap warm, which is what the floor costs per session at any scale (see the bench's growth lines).
 */
async function pass(root: string): Promise<{ ms: number; lines: number; bytes: number }> {
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
  return { ms: performance.now() - started, lines, bytes };
}

async function main(root: string, passes: number): Promise<void> {
  const first = await pass(root);
  const passMs = [first.ms];
  for (let i = 1; i < passes; i++) passMs.push((await pass(root)).ms);
  process.stdout.write(`${JSON.stringify({ ...first, passMs, maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
}

void main(process.argv[2]!, Number(process.argv[3] ?? 1));
