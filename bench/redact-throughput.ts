import { createReadStream, readdirSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { redactJsonValue, redactText } from '../src/core/redact.js';

/**
 * Redaction alone, over every text the converter would mask in the bench corpus (message text,
 * tool output, tool-call arguments): its time is the share of an import that redaction costs.
 */
async function main(root: string): Promise<void> {
  const texts: string[] = [];
  const args: unknown[] = [];
  const collect = (message: Record<string, unknown>): void => {
    const content = message.content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const block of content as Array<Record<string, unknown>>) {
        if (typeof block.text === 'string') texts.push(block.text);
        if (block.type === 'toolCall' && block.arguments !== undefined) args.push(block.arguments);
      }
    }
  };
  const walk = async (dir: string): Promise<void> => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.name === 'messages.jsonl') {
        const rl = createInterface({ input: createReadStream(full), crlfDelay: Infinity });
        for await (const line of rl) {
          if (!line) continue;
          const envelope = JSON.parse(line) as { message?: Record<string, unknown> };
          if (envelope.message) collect(envelope.message);
        }
      }
    }
  };
  await walk(path.join(root, 'v2', 'sessions'));
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0) + args.reduce<number>((n, a) => n + JSON.stringify(a).length, 0);
  // Warm the regexes up first, as a long import does.
  for (const t of texts.slice(0, 2000)) redactText(t);
  const started = performance.now();
  const cpu = process.cpuUsage();
  let masked = 0;
  for (const t of texts) if (redactText(t) !== t) masked++;
  for (const a of args) redactJsonValue(a);
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  process.stdout.write(`${JSON.stringify({ ms, cpuMs, bytes, texts: texts.length, args: args.length, masked, maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
}

void main(process.argv[2]!);
