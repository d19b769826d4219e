// A worker thread that tries a TLS connection and reports the error code (net-guard.test.ts).
import https from 'node:https';
import { parentPort } from 'node:worker_threads';

https.get('https://198.51.100.7/').on('error', (err) => parentPort.postMessage(err.code));
