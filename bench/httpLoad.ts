/**
 * A lean HTTP load client for large answers: CONNECTIONS keep-alive connections, each sending its next request as
 * soon as the previous answer has fully arrived, for SECONDS; the body is counted and dropped. autocannon keeps
 * every body it receives as a string, which for a 4 MB answer costs the client some 20 ms of CPU per request, far
 * more than the server spends: it would measure itself. Prints JSON: requests, perSecond, p99 (ms), errors, bytes.
 *   node dist/bench/httpLoad.js URL CONNECTIONS SECONDS [HEADER: VALUE ...]
 */
import { Agent, request } from 'node:http';

const [url, connectionsText, secondsText, ...headerArgs] = process.argv.slice(2);
const connections = Number(connectionsText);
const seconds = Number(secondsText);
const headers = Object.fromEntries(headerArgs.map((h) => [h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]));
const agent = new Agent({ keepAlive: true, maxSockets: connections });
const latencies: number[] = [];
let errors = 0;
let bytes = 0;
const endAt = performance.now() + seconds * 1000;

function once(): Promise<void> {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = request(url!, { agent, headers }, (res) => {
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => {
        if (res.statusCode === 200) latencies.push(performance.now() - started);
        else errors++;
        resolve();
      });
      res.on('error', () => {
        errors++;
        resolve();
      });
    });
    req.on('error', () => {
      errors++;
      resolve();
    });
    req.end();
  });
}

async function loop(): Promise<void> {
  while (performance.now() < endAt) await once();
}

const began = performance.now();
await Promise.all(Array.from({ length: connections }, loop));
const elapsed = (performance.now() - began) / 1000;
latencies.sort((a, b) => a - b);
const p99 = latencies.length === 0 ? 0 : latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * 0.99) - 1)]!;
process.stdout.write(`${JSON.stringify({ requests: latencies.length, perSecond: latencies.length / elapsed, p99, errors, bytes })}\n`);
agent.destroy();
