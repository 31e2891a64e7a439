import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { VERSION } from '../../src/version.js';
import { runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel } from '../support/daemon.js';
import { FakeGpio } from '../support/fakeGpio.js';
import { ManualTime } from '../support/manualTime.js';
import { freePort, rawGet } from '../support/net.js';
import { labelValues, sampleValue, scrape, scrapeUntil, type Exposition } from '../support/prometheus.js';
import { PtyPair } from '../support/socat.js';

// The agent's Prometheus metrics (docs/operations.md, "Metrics"): the real `door-agent run` with a socat pty as its reader,
// scraped over HTTP and parsed as the exposition format. Cards of examples/snapshot.json: 4213578 Alice (Staff,
// PIN 1234, email_id 101, user_id 1), 4213579 Bob (suspended, email_id 102, user_id 2).

const tmp = tempDir('door-agent-metrics-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let n = 0;
function siteDir(): string {
  const dir = join(tmp.path, `m${n++}`);
  mkdirSync(dir);
  return dir;
}

const decisions = (e: Exposition) => e.samples.filter((s) => s.name === 'door_agent_decisions_total').reduce((sum, s) => sum + s.value, 0);

describe('door-agent run with metrics', () => {
  it('serves the decisions, tap to relay, reader, outbox, cache age and build info, with no card, PIN or user in it', async () => {
    const dir = siteDir();
    const port = await freePort();
    const noBroker = await freePort(); // nothing listens there: every event stays in the outbox
    const config = writeConfig(dir, {
      extra: `metrics: { listen: "127.0.0.1:${port}" }\nmqtt: { url: "mqtt://127.0.0.1:${noBroker}" }`,
      doorExtra: `    unlockSeconds: 1\n    reader: { path: ${dir}/reader }\n`,
    });
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const pty = new PtyPair(join(dir, 'reader'), join(dir, 'terminal'));
    await pty.plugIn();
    cleanups.push(() => pty.unplug());
    const daemon = new Daemon(config);
    cleanups.push(() => daemon.stop('SIGKILL'));
    await daemon.waitForMessage('door-agent ready');
    await daemon.waitForMessage('reader connected');
    expect(daemon.logs.find((l) => l.msg === `metrics on http://127.0.0.1:${port}/metrics`)).toBeDefined();

    const before = await scrape(port);
    expect(sampleValue(before.exposition, 'door_agent_decisions_total', { door: 'Front door', result: 'granted', reason: 'none' })).toBe(0);
    expect(sampleValue(before.exposition, 'door_agent_reader_up', { door: 'Front door' })).toBe(1);

    // Two grants (Alice's card, her PIN), a suspended user's card, a card nobody holds, a PIN nobody holds.
    const taps = ['0004213578\r\n', '4213579\r\n', '9999999\r\n', '1234#', '5555#'];
    for (const [i, tap] of taps.entries()) {
      pty.write(tap);
      await scrapeUntil(port, (e) => decisions(e) === i + 1, `decision ${i + 1}`);
    }
    const { text, exposition } = await scrape(port);
    const count = (labels: Record<string, string>) => sampleValue(exposition, 'door_agent_decisions_total', { door: 'Front door', ...labels });
    expect(count({ result: 'granted', reason: 'none' })).toBe(2);
    expect(count({ result: 'denied', reason: 'user_suspended' })).toBe(1);
    expect(count({ result: 'denied', reason: 'unknown_credential' })).toBe(2);
    expect(exposition.types.get('door_agent_decisions_total')).toBe('counter');

    expect(exposition.types.get('door_agent_tap_to_relay_seconds')).toBe('histogram');
    expect(sampleValue(exposition, 'door_agent_tap_to_relay_seconds_count', { door: 'Front door' })).toBe(2);
    const sum = sampleValue(exposition, 'door_agent_tap_to_relay_seconds_sum', { door: 'Front door' })!;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(2); // two grants, each well under a second even on a loaded machine
    expect(sampleValue(exposition, 'door_agent_tap_to_relay_seconds_bucket', { door: 'Front door', le: '0.0001' })).toBeDefined();

    expect(sampleValue(exposition, 'door_agent_reader_up', { door: 'Front door' })).toBe(1);
    // Every decision and lock change waits for a broker that is not there.
    expect(sampleValue(exposition, 'door_agent_outbox_events')).toBeGreaterThanOrEqual(5);
    const age = sampleValue(exposition, 'door_agent_cache_age_seconds')!;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(300); // imported just before the start
    expect(sampleValue(exposition, 'door_agent_build_info', { version: VERSION, node: process.version })).toBe(1);
    // The process and event-loop metrics of prom-client.
    expect(sampleValue(exposition, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sampleValue(exposition, 'nodejs_eventloop_lag_seconds')).toBeDefined();

    // No identity anywhere: not in a name, a HELP text or a label; no card number as a value either.
    for (const secret of ['alice@example.org', 'bob@example.org', 'Alice', 'Bob', 'alice', 'Adams', 'Staff']) expect(text).not.toContain(secret);
    const cardsAndPins = ['4213578', '0004213578', '4213579', '9999999', '1234', '5555'];
    for (const value of labelValues(exposition)) for (const secret of cardsAndPins) expect(value).not.toContain(secret);
    // Alice's and Bob's email ids and user ids (prom-client's own nodejs_version_info has a patch="2").
    for (const value of labelValues(exposition, 'door_agent_')) expect(['101', '102', '1', '2']).not.toContain(value);
    const comments = text.split('\n').filter((l) => l.startsWith('#'));
    for (const secret of cardsAndPins) expect(comments.join('\n')).not.toContain(secret);
    for (const sample of exposition.samples) expect([4213578, 4213579, 9999999]).not.toContain(sample.value);

    // The reader unplugged: down at the next scrape.
    await pty.unplug();
    await scrapeUntil(port, (e) => sampleValue(e, 'door_agent_reader_up', { door: 'Front door' }) === 0, 'reader down');
  });

  it('answers GET /metrics only: any other path or method is 404', async () => {
    const dir = siteDir();
    const port = await freePort();
    const daemon = new Daemon(writeConfig(dir, { extra: `metrics: { listen: "127.0.0.1:${port}" }` }));
    cleanups.push(() => daemon.stop('SIGKILL'));
    await daemon.waitForMessage('door-agent ready');
    expect((await rawGet(port, '/')).status).toBe(404);
    expect((await rawGet(port, '/metrics/x')).status).toBe(404);
    expect((await rawGet(port, '/metrics?name[]=x')).status).toBe(200);
    const post = await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' });
    expect(post.status).toBe(404);
    // No reader, no broker: no reader_up series and no outbox.
    const { exposition } = await scrape(port);
    expect(sampleValue(exposition, 'door_agent_reader_up')).toBeUndefined();
    expect(exposition.types.has('door_agent_outbox_events')).toBe(false);
    expect(exposition.types.has('door_agent_sync_duration_seconds')).toBe(false);
    expect(sampleValue(exposition, 'door_agent_tap_to_relay_seconds_count', { door: 'Front door' })).toBe(0);
    expect(await daemon.stop('SIGTERM')).toMatchObject({ code: 0 });
    await expect(rawGet(port, '/metrics')).rejects.toThrow(/ECONNREFUSED/);
  });

  it('a metrics address already in use: exit 1 naming it and the key, every relay locked, no door started', async () => {
    const dir = siteDir();
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
    const port = (taken.address() as { port: number }).port;
    const config = writeConfig(dir, { extra: `metrics: { listen: "127.0.0.1:${port}" }` });
    const r = await runCliAsync(['run', '--config', config]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port} (metrics.listen)`);
    expect(r.stderr).toContain('another program already listens there (stop it, or change metrics.listen)');
    expect(readLevel(join(dir, 'gpio/gpio17/value'))).toBe('0');
    expect(r.stdout).not.toContain('door-agent ready');
  });

  it('a malformed metrics.listen is a configuration error naming the key (exit 78)', () => {
    for (const [listen, message] of [
      ['9464', 'metrics.listen: expected HOST:PORT, e.g. 127.0.0.1:9464'],
      ['127.0.0.1:70000', 'metrics.listen: the port must be 0-65535'],
    ]) {
      const config = writeConfig(siteDir(), { extra: `metrics: { listen: "${listen}" }` });
      const r = runCli(['config', 'check', '--config', config]);
      expect(r.status).toBe(78);
      expect(r.stderr).toContain(message);
      expect(r.stderr.match(/metrics\.listen/g)).toHaveLength(1); // one problem, one message
    }
    const ok = writeConfig(siteDir(), { extra: 'metrics: {}' });
    const r = runCli(['config', 'check', '--config', ok]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('metrics: GET http://127.0.0.1:9464/metrics');
  });
});

describe('several agents in one process', () => {
  it('each has a registry of its own: both serve their metrics, and a stopped one stops serving', async () => {
    const quiet = pino({ level: 'silent' });
    const agents: Agent[] = [];
    for (const _ of [1, 2]) {
      const dir = siteDir();
      const path = writeConfig(dir, { extra: 'metrics: { listen: "127.0.0.1:0" }' });
      expect(runCli(['import', 'examples/snapshot.json', '--config', path]).status).toBe(0);
      const time = new ManualTime();
      const agent = await startAgent(loadConfig(path), { logger: quiet, clock: time, timers: time, gpio: new FakeGpio([]), clockSynchronized: () => true });
      cleanups.push(() => agent.stop());
      agents.push(agent);
    }
    const ports = agents.map((a) => Number(a.metricsAddress()!.split(':')[1]));
    expect(ports[0]).not.toBe(ports[1]);
    for (const port of ports) {
      const { exposition } = await scrape(port);
      expect(sampleValue(exposition, 'door_agent_decisions_total', { door: 'Front door', result: 'granted', reason: 'none' })).toBe(0);
      expect(sampleValue(exposition, 'door_agent_build_info', { version: VERSION })).toBe(1);
    }
    await agents[0]!.stop();
    await expect(rawGet(ports[0]!, '/metrics')).rejects.toThrow(/ECONNREFUSED/);
    expect((await scrape(ports[1]!)).exposition.samples.length).toBeGreaterThan(0);
  });
});
