import { describe, expect, it } from 'vitest';
import { FLOOD_BURST } from '../../src/door/inputFloods.js';
import type { WireEvent } from '../../src/store/eventLog.js';
import { useDoorRuntime } from './doorRuntimeHarness.js';

// Floods of the inputs an attacker can toggle (issue 32 item 13): a real DoorRuntime and EventLog, a manual clock.

const setup = useDoorRuntime();
const summaries = (events: WireEvent[]) => events.filter((e) => e.summary === true);
const counted = (events: WireEvent[]) => events.reduce((n, e) => n + (e.summary === true ? (e.count as number) : 1), 0);

describe('floods of toggled inputs', () => {
  it('a tamper switch toggled 100 times in 10 s: the first events at once, then one summary with the count and the last state', () => {
    const t = setup();
    t.runtime.onTamper(false, true);
    for (let i = 0; i < 100; i++) {
      t.runtime.onTamper(i % 2 === 0); // active, cleared, ..., ends cleared
      t.time.advance(100);
    }
    t.runtime.onTamper(true); // the last toggle leaves the switch open
    const during = t.all().filter((e) => e.type === 'tamper');
    expect(during).toHaveLength(FLOOD_BURST);
    expect(t.runtime.tamperState()).toBe('ON'); // the published state is never summarized
    t.time.advance(60_000);
    const tamper = t.all().filter((e) => e.type === 'tamper');
    expect(tamper).toHaveLength(FLOOD_BURST + 1);
    expect(summaries(tamper)).toHaveLength(1);
    expect(summaries(tamper)[0]).toMatchObject({ summary: true, count: 101 - FLOOD_BURST, state: 'active', current: { tamper: 'ON' } });
    expect(Date.parse(summaries(tamper)[0]!.first_at as string)).toBeLessThan(Date.parse(summaries(tamper)[0]!.last_at as string));
    expect(counted(tamper)).toBe(101); // nothing lost: each toggle is an event or counted in one
    // The alarm topic is limited the same way: one alarm per recorded event.
    expect(t.alarms.filter((a) => a.type === 'tamper')).toHaveLength(FLOOD_BURST + 1);
    // Still flooded, for 5 minutes: one summary a minute, no new burst, every toggle counted.
    for (let i = 0; i < 3000; i++) {
      t.runtime.onTamper(i % 2 === 1);
      t.time.advance(100);
    }
    t.time.advance(120_000);
    const later = t
      .all()
      .filter((e) => e.type === 'tamper')
      .slice(FLOOD_BURST + 1);
    expect(later.every((e) => e.summary === true)).toBe(true);
    expect(later.length).toBeGreaterThanOrEqual(5);
    expect(later.length).toBeLessThanOrEqual(6);
    expect(counted(later)).toBe(3000);
    // Quiet for a minute: the next toggle is recorded at once again.
    t.time.advance(60_000);
    const before = t.all().length;
    t.runtime.onTamper(false);
    expect(t.all().slice(before)).toMatchObject([{ type: 'tamper', state: 'cleared' }]);
  });

  it('a magnet on the reed switch (100 changes in 10 s, locked): opened, forced and closed each summarized; the first forced alarm at once', () => {
    const t = setup();
    t.runtime.initialContact(false);
    t.time.advance(10_000);
    for (let i = 0; i < 100; i++) {
      t.runtime.onContact(i % 2 === 0);
      t.time.advance(100);
    }
    expect(t.all()[1]).toMatchObject({ type: 'door_forced' }); // the first forced alarm is not held back
    expect(t.alarms[0]).toMatchObject({ type: 'door_forced' });
    t.time.advance(60_000);
    const byType = (type: string) => t.all().filter((e) => e.type === type);
    for (const type of ['door_opened', 'door_closed', 'door_forced']) {
      expect(byType(type), type).toHaveLength(FLOOD_BURST + 1);
      expect(counted(byType(type)), type).toBe(50);
    }
    expect(summaries(byType('door_closed'))[0]).toMatchObject({ count: 50 - FLOOD_BURST, current: { door: 'CLOSED' } });
    expect(t.runtime.contactState()).toBe('CLOSED');
    expect(t.all().length).toBeLessThanOrEqual(3 * (FLOOD_BURST + 1)); // instead of 150
    expect(t.alarms.filter((a) => a.type === 'door_forced')).toHaveLength(FLOOD_BURST + 1);
  });

  it('OSDP noise at ~215 frames/s for 30 s: O(1) reader_noise events whose frames add up', () => {
    const t = setup();
    const seconds = 30;
    for (let s = 0; s < seconds; s++) {
      for (let f = 0; f < 215; f++) t.runtime.onReaderNoise({ count: 1, units: 0, reasons: { [f % 2 ? 'plain_reply' : 'bad_mac']: 1 } });
      t.time.advance(1000);
    }
    t.time.advance(60_000);
    const noise = t.all().filter((e) => e.type === 'reader_noise');
    expect(noise).toHaveLength(FLOOD_BURST + 1);
    expect(noise.reduce((n, e) => n + (e.frames as number), 0)).toBe(215 * seconds);
    const summary = summaries(noise)[0]!;
    expect(summary.count).toBe(215 * seconds - FLOOD_BURST);
    const reasons = summary.reasons as Record<string, number>;
    expect(reasons.plain_reply! + reasons.bad_mac!).toBe(215 * seconds - FLOOD_BURST);
  });

  it('a summary still counting when the door stops is recorded, not lost', () => {
    const t = setup();
    for (let i = 0; i < 25; i++) t.runtime.onReaderNoise({ count: 1, units: 26, reasons: { parity: 1 } });
    t.runtime.stop();
    const noise = t.all().filter((e) => e.type === 'reader_noise');
    expect(noise.reduce((n, e) => n + (e.frames as number), 0)).toBe(25);
    expect(summaries(noise)[0]).toMatchObject({ count: 25 - FLOOD_BURST, bits: 26 * (25 - FLOOD_BURST) });
  });

  it('a busy door (10 passages a minute) keeps every event exact', () => {
    const t = setup();
    t.runtime.initialContact(false);
    for (let i = 0; i < 10; i++) {
      t.runtime.onExitButton(true);
      t.runtime.onContact(true);
      t.time.advance(2000);
      t.runtime.onContact(false);
      t.time.advance(4000);
    }
    expect(t.all().filter((e) => e.type === 'door_opened' || e.type === 'door_closed')).toHaveLength(20);
    expect(summaries(t.all())).toEqual([]);
  });
});
