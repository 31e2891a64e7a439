import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgesOf, encodeCard } from '../../src/core/wiegand.js';
import { writeSimulatedEdges } from '../../src/hardware/simulatedEdges.js';
import { auditEvents, connectOperator, startDaemon, type Cleanups } from '../support/agentSite.js';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { readLevel, waitUntil } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';

// An area through the real `door-agent run` (issue 26, docs/areas.md): the front door leads into the lab, with an
// entry and an exit Wiegand reader on the simulated chip and a contact; real mosquitto. The muster list must be
// right after a restart, SIGKILL included: it is replayed from the audit log, whose passages are synced at once.
// Cards of examples/snapshot.json: Alice 4213578 (Staff), Erin 4213581 (Night shift).
const tmp = tempDir('door-agent-areas-');
let broker: Mosquitto;
const cleanups: Cleanups = [];
beforeAll(async () => {
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await broker?.stop();
  tmp.cleanup();
});

const ENTRY = { d0: 5, d1: 6 };
const EXIT = { d0: 12, d1: 13 };
const CONTACT = 20;
const ALICE = 4_213_578n;
const ERIN = 4_213_581n;

describe('an area with an entry and an exit reader (daemon)', () => {
  it('records directions, keeps the muster list retained, and has the same list after a SIGKILL and a restart', async () => {
    const dir = join(tmp.path, 'site');
    mkdirSync(dir);
    const config = writeConfig(dir, {
      id: 'ar',
      agent: 'rtc: true',
      extra: `mqtt: { url: "${broker.url}", topicPrefix: ar, keepaliveSeconds: 5, homeAssistant: { discovery: false } }
areas: [ { id: lab, name: Lab, doors: [Front door], antiPassback: { mode: hard, rule: inout }, maxOccupancy: 10 } ]`,
      doorExtra: `    contact: { pin: ${CONTACT}, debounceMs: 0 }
    readers: { entry: { type: wiegand, d0: ${ENTRY.d0}, d1: ${ENTRY.d1} }, exit: { type: wiegand, d0: ${EXIT.d0}, d1: ${EXIT.d1} } }
`,
    });
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const gpio = join(dir, 'gpio');
    const relay = () => readLevel(join(gpio, 'gpio17/value'));
    const contact = (level: 0 | 1) => writeFileSync(join(gpio, `gpio${CONTACT}`, 'value'), `${level}\n`);
    /** A card at a reader, the door opened and closed again once it unlocks; resolves once it relocked. */
    const pass = async (reader: typeof ENTRY, card: bigint) => {
      writeSimulatedEdges(gpio, reader, edgesOf(encodeCard(card), 0));
      await waitUntil(() => relay() === '1', 5000, 'unlocked');
      contact(1);
      await waitUntil(() => auditEvents(config).filter((e) => e.type === 'door_opened').length > opened, 5000, 'the opening recorded');
      opened++;
      contact(0);
      await waitUntil(() => relay() === '0', 5000, 'relocked on close');
    };
    let opened = 0;

    const topic = 'ar/agents/ar/areas/lab/occupancy';
    const op = await connectOperator(broker.url, cleanups, [topic]);
    let daemon = await startDaemon(config, cleanups, { waitFor: ['Wiegand reader listening'] });
    await op.waitFor((m) => m.topic === topic && (m.json as { count: number }).count === 0, 10_000, 'the empty list');
    await pass(ENTRY, ALICE);
    await pass(ENTRY, ERIN);
    await op.waitFor((m) => m.topic === topic && (m.json as { count: number }).count === 2, 10_000, 'both in');
    op.clear();
    await pass(EXIT, ERIN);
    const list = await op.waitFor((m) => m.topic === topic, 10_000, 'Alice alone');
    const occupants = (list.json as { occupants: Array<Record<string, unknown>> }).occupants;
    expect(occupants).toEqual([
      { holder: 'user:101', email_id: 101, name: 'Alice Adams', since: expect.any(String), door: DOOR_UUID, door_name: 'Front door' },
    ]);
    expect(
      auditEvents(config)
        .filter((e) => e.type === 'access_granted')
        .map((e) => [e.who, e.direction]),
    ).toEqual([
      ['Alice Adams', 'entry'],
      ['Erin Evans', 'entry'],
      ['Erin Evans', 'exit'],
    ]);

    // A power cut, as far as the process can tell: SIGKILL. The list comes back the same, replayed from state.db.
    await daemon.stop('SIGKILL');
    op.clear();
    daemon = await startDaemon(config, cleanups, { waitFor: ['Wiegand reader listening'] });
    const again = await op.waitFor((m) => m.topic === topic, 10_000, 'the list after the restart');
    expect((again.json as { occupants: unknown[] }).occupants).toEqual(occupants);
    const status = runCli(['status', '--config', config]).stdout;
    expect(status).toContain('Lab (lab): 1 inside of at most 10; anti-passback hard inout');
    expect(status).toContain(`Alice Adams (user:101) since ${occupants[0]!.since}, through Front door`);
    expect(status).toMatch(
      /reader Wiegand D0 GPIO 5 \/ D1 GPIO 6 \(numbering data\) listening; exit reader Wiegand D0 GPIO 12 \/ D1 GPIO 13 \(numbering data\) listening/,
    );

    // And anti-passback still knows Alice is in.
    writeSimulatedEdges(gpio, ENTRY, edgesOf(encodeCard(ALICE), 0));
    await waitUntil(() => auditEvents(config).some((e) => e.type === 'access_denied'), 5000, 'the refusal');
    expect(auditEvents(config).filter((e) => e.type === 'access_denied')).toEqual([
      expect.objectContaining({ reason: 'passback', area: 'lab', direction: 'entry' }),
    ]);
    expect(relay()).toBe('0');
  }, 60_000);
});
