/**
 * A storm of doors: CLIENTS GETs of URL started at once, each on its own connection (as doors after a power cut),
 * each read to its end (the body counted against its Content-Length, then dropped). A request with no byte for
 * SILENCE seconds is abandoned and counted as timed out, as an agent's `service.timeoutSeconds` does.
 * Prints JSON: allMs (until the last complete body; null when some never completed), completed, refused (503, 429),
 * failed (another status, a broken connection, a body shorter than announced), timedOut, bytes (per body), p50Ms.
 *   node dist/bench/stormClient.js URL CLIENTS SILENCE [HEADER: VALUE ...]
 * With STORM_WARM_URL set, each door first GETs that URL on a kept-alive connection of its own and the storm's clock
 * starts once all are open: the doors of a change, each asking again on the connection of its last sync.
 */
import { Agent, request } from 'node:http';

const [url, clientsText, silenceText, ...headerArgs] = process.argv.slice(2);
const clients = Number(clientsText);
const silenceMs = Number(silenceText) * 1000;
const headers = Object.fromEntries(headerArgs.map((h) => [h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]));

type Outcome = { kind: 'completed'; ms: number; bytes: number } | { kind: 'refused' | 'failed' | 'timedOut' };

function door(started: number, agent: Agent | false): Promise<Outcome> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const timer = setTimeout(() => {
      done({ kind: 'timedOut' });
      req.destroy();
    }, silenceMs);
    const req = request(url!, { agent, headers }, (res) => {
      timer.refresh();
      const expected = Number(res.headers['content-length']);
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        timer.refresh();
      });
      res.on('end', () => {
        if (res.statusCode === 503 || res.statusCode === 429) done({ kind: 'refused' });
        else if (res.statusCode !== 200 || (Number.isFinite(expected) && bytes !== expected)) done({ kind: 'failed' });
        else done({ kind: 'completed', ms: performance.now() - started, bytes });
      });
      res.on('error', () => done({ kind: 'failed' }));
    });
    req.on('error', () => done({ kind: 'failed' }));
    req.end();
  });
}

/** One GET of `warmUrl` on the door's own connection, kept open for the storm. */
function warm(warmUrl: string, agent: Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    request(warmUrl, { agent, headers }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET ${warmUrl} answered ${res.statusCode}`))));
    })
      .on('error', reject)
      .end();
  });
}

const warmUrl = process.env.STORM_WARM_URL;
const agents = Array.from({ length: clients }, () => (warmUrl ? new Agent({ keepAlive: true, maxSockets: 1 }) : (false as const)));
if (warmUrl) await Promise.all(agents.map((agent) => warm(warmUrl, agent as Agent)));
const started = performance.now();
const outcomes = await Promise.all(agents.map((agent) => door(started, agent)));
for (const agent of agents) if (agent) agent.destroy();
const completed = outcomes.filter((o): o is Extract<Outcome, { kind: 'completed' }> => o.kind === 'completed');
const times = completed.map((o) => o.ms).sort((a, b) => a - b);
const count = (kind: Outcome['kind']) => outcomes.filter((o) => o.kind === kind).length;
process.stdout.write(
  `${JSON.stringify({
    allMs: completed.length === clients ? times.at(-1) : null,
    completed: completed.length,
    refused: count('refused'),
    failed: count('failed'),
    timedOut: count('timedOut'),
    bytes: completed[0]?.bytes ?? 0,
    p50Ms: times[Math.floor(times.length / 2)] ?? null,
  })}\n`,
);
