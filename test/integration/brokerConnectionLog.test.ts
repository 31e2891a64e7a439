import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IClientOptions, MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connectWithBackoff } from '../../src/protocol/connection.js';
import { tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';
import { makeTlsFiles, Mosquitto, type TlsFiles } from '../support/mosquitto.js';

// What an operator reads when the broker cannot be reached: one line where an outage starts, in the caller's
// words, and for a certificate what to do about it; the retries that follow do not repeat it.
const tmp = tempDir('door-agent-connection-log-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface Line {
  level: number;
  msg: string;
  [key: string]: unknown;
}

let n = 0;

/** connectWithBackoff with its log lines collected and its connection attempts counted (retries 0.7 s, 1.4 s ... apart). */
function connectLogged(url: string, options: IClientOptions, lostMessage?: string) {
  const lines: Line[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
  const client: MqttClient = connectWithBackoff(url, Object.assign({ protocolVersion: 5 as const, connectTimeout: 5000 }, options), logger, {
    lostMessage,
    random: () => 1,
  });
  cleanups.push(() => client.endAsync(true));
  let failures = 0;
  client.on('error', () => failures++);
  return { client, lines, failures: () => failures };
}

/** A CA and a broker certificate that names only `broker.invalid`, not the address the test connects to. */
const certificateForAnotherName = (dir: string): TlsFiles => makeTlsFiles(dir, 'name', { cn: 'broker.invalid', altNames: 'DNS:broker.invalid' });

async function broker(tls?: TlsFiles): Promise<Mosquitto> {
  const b = new Mosquitto(join(tmp.path, `broker${n++}`), tls);
  await b.start();
  cleanups.push(() => b.stop());
  return b;
}

describe('the broker connection in the log', () => {
  it('a certificate that does not name the host it is reached by says so, once however often it is tried', async () => {
    const tls = certificateForAnotherName(join(tmp.path, 'other-name'));
    const b = await broker(tls);
    const c = connectLogged(b.url, { ca: readFileSync(tls.ca) });
    await waitUntil(() => c.failures() >= 3, 20_000, 'three attempts refused');
    expect(c.lines.map((l) => [l.level, l.msg])).toEqual([
      [50, "the broker's certificate does not name 127.0.0.1: connect by a name it carries (its subjectAltName), or issue it for this name"],
    ]);
  }, 60_000);

  it('a certificate not signed by the CA given: the CA advice, once, and no "connection lost" for a connection never made', async () => {
    const b = await broker(makeTlsFiles(join(tmp.path, 'broker-ca'), 'broker'));
    const other = makeTlsFiles(join(tmp.path, 'other-ca'), 'other');
    const c = connectLogged(b.url, { ca: readFileSync(other.ca) });
    await waitUntil(() => c.failures() >= 3, 20_000, 'three attempts refused');
    expect(c.lines.map((l) => [l.level, l.msg])).toEqual([
      [50, 'broker certificate not trusted: refusing to connect (set mqtt.caFile to the CA that signed it)'],
    ]);
  }, 60_000);

  it("a connection lost is told once in the caller's words, the refused retries once, and again at the next outage", async () => {
    const b = await broker();
    const lost = "broker connection lost; the doors' events wait at the broker for this session";
    const c = connectLogged(b.url, {}, lost);
    await waitUntil(() => c.client.connected, 10_000, 'connected');
    await b.stop();
    const before = c.failures();
    await waitUntil(() => c.failures() >= before + 2, 20_000, 'two reconnects refused');
    expect(c.lines.map((l) => [l.level, l.msg, (l.err as { code?: string } | undefined)?.code])).toEqual([
      [40, lost, undefined],
      [40, 'broker connection error', 'ECONNREFUSED'],
    ]);
    await b.start();
    await waitUntil(() => c.lines.some((l) => l.msg === 'broker connection restored'), 20_000, 'restored');
    await b.stop();
    await waitUntil(() => c.lines.filter((l) => l.msg === lost).length === 2, 20_000, 'the next outage');
  }, 90_000);
});
