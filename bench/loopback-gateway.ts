import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The gateway as the two-sink bench needs it: a loopback server that reads each request whole,
 * parses its JSON (as a server would) and acknowledges it at once, counting what it took. Run as
 * its own process (the bench's own blocks while it waits for an import): it prints its URL, then on
 * SIGTERM its counts as one JSON line. `GET /cpu` answers the CPU it has used so far, so the bench
 * can add the server's share of the machine to each import's (both run on the same cores).
 */
let requests = 0;
let messages = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/cpu') {
    const used = process.cpuUsage();
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ cpuMs: (used.user + used.system) / 1000 }));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages?: unknown[] };
    requests += 1;
    messages += body.messages?.length ?? 0;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ status: 0, requestId: `bench-${requests}`, result: { status: 'ok', messageCount: body.messages?.length ?? 0 } }));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify({ requests, messages })}\n`);
  server.close();
  server.closeAllConnections();
});
