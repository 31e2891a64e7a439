import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEvents, type Cleanups } from '../support/agentSite.js';
import { runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon } from '../support/daemon.js';
import { makeTlsFiles, type TlsFiles } from '../support/mosquitto.js';
import { Rsyslog } from '../support/rsyslog.js';
import { sleep, waitUntil } from '../support/wait.js';

/**
 * The agent's own syslog export (docs/audit.md, "SIEM export: syslog"), for a site without a service: a real
 * `door-agent run` sends the events of its state.db to a real rsyslogd over TLS, at least once, across an outage of
 * the receiver and a restart of the agent.
 */

const AGENT = 'gate-pi';
const PEN = 32473;
const tmp = tempDir('door-agent-syslog-agent-');
const cleanups: Cleanups = [];
let siem: TlsFiles;
let rsyslog: Rsyslog;
let config: string;

/** A press of the exit button (active low): exit_request, then the door's unlock and relock. */
async function press(): Promise<void> {
  writeFileSync(join(tmp.path, 'gpio/gpio22/value'), '0\n');
  await sleep(150);
  writeFileSync(join(tmp.path, 'gpio/gpio22/value'), '1\n');
  await sleep(150);
}

async function startAgent(): Promise<Daemon> {
  const daemon = new Daemon(config);
  cleanups.push(() => daemon.stop('SIGKILL'));
  await daemon.waitForMessage('door-agent ready', 20_000);
  return daemon;
}

/** The ids rsyslog received, in order. */
const receivedIds = () => rsyslog.received().map((m) => m.sd[`meta@${PEN}`]?.id ?? '');

/** Waits until every event of the agent's log has reached rsyslog; checks they first came in seq order. */
async function everyEventReceived(what: string): Promise<Array<Record<string, unknown>>> {
  let events: Array<Record<string, unknown>> = [];
  await waitUntil(
    () => {
      events = auditEvents(config);
      const ids = new Set(receivedIds());
      return events.length > 0 && events.every((e) => ids.has(e.id as string));
    },
    45_000,
    what,
  );
  // Read again after what rsyslog has: the daemon goes on recording (a relock after the unlock), so rsyslog may
  // hold one more than the log read above; what it received is the log's beginning, first copies in seq order.
  const firsts = [...new Set(receivedIds())];
  events = auditEvents(config);
  expect(firsts).toEqual(events.slice(0, firsts.length).map((e) => e.id));
  return events;
}

beforeAll(async () => {
  siem = makeTlsFiles(tmp.path, 'siem');
  rsyslog = new Rsyslog(join(tmp.path, 'rsyslog'), siem);
  await rsyslog.start();
  config = writeConfig(tmp.path, {
    id: AGENT,
    access: '{ groups: [Staff] }',
    extra: `syslog:
  url: ${rsyslog.url}
  caFile: ${siem.ca}
  facility: local4
`,
    doorExtra: `    unlockSeconds: 1
    exitButton: { pin: 22, debounceMs: 20 }
`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await rsyslog?.stop();
  tmp.cleanup();
});

describe('the agent exports its own audit log as syslog', () => {
  let daemon: Daemon;

  it("sends a real daemon's events in order, each as in its log, HOSTNAME the agent's id", async () => {
    daemon = await startAgent();
    await daemon.waitForMessage('sending audit events to the syslog receiver', 20_000);
    await press();
    await press();
    const events = await everyEventReceived("the daemon's events at rsyslog");
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['audit_chain_started', 'config_changed', 'exit_request', 'unlocked']));
    const received = rsyslog.received();
    for (const message of received) {
      const event = events.find((e) => e.id === message.sd[`meta@${PEN}`]!.id)!;
      expect(message.hostname).toBe(AGENT);
      expect(message.msgId).toBe(event.type);
      expect(message.timestamp).toBe(event.at);
      // local4 (20), info (6) for these types.
      expect(message.pri).toBe(20 * 8 + 6);
      expect(message.sd[`meta@${PEN}`]!.seq).toBe(String(event.seq));
      // The head the board published, as its log holds it (docs/audit.md, "The chain").
      expect(event.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(message.sd[`meta@${PEN}`]!.hash).toBe(event.hash);
      expect(message.sd[`meta@${PEN}`]!.chain).toBe(event.chain);
    }
  }, 60_000);

  it('keeps what it could not send across an outage of the receiver and a restart of the agent: all arrive, in order', async () => {
    await rsyslog.stop();
    await press();
    await press();
    // The agent stopped while the receiver is away: what it had not sent waits in state.db, behind its cursor.
    await daemon.stop('SIGTERM');
    daemon = await startAgent();
    await press();
    await sleep(500);
    await rsyslog.start();
    await daemon.waitForMessage('the syslog receiver is back: sending the events that waited', 45_000);
    const events = await everyEventReceived('the events of the outage at rsyslog');
    expect(events.filter((e) => e.type === 'exit_request').length).toBe(5);
    // One warning for the outage (per process), not one per attempt.
    expect(daemon.logs.filter((l) => l.msg.startsWith('the syslog receiver cannot be reached')).length).toBe(1);
  }, 90_000);
});
