import { describe, expect, it } from 'vitest';
import { HA_EVENTS, HA_EVENT_ENTITIES, haEventOf, haEventTypes, unlockRefusedEvent } from '../../src/mqtt/haEvents.js';

const DOOR = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';

describe("Home Assistant's event types (one table)", () => {
  it('gives each event_type one row, and every entity at least one type', () => {
    const types = HA_EVENTS.map((row) => row.eventType);
    expect(new Set(types).size).toBe(types.length);
    for (const entity of Object.keys(HA_EVENT_ENTITIES) as Array<keyof typeof HA_EVENT_ENTITIES>) expect(haEventTypes(entity).length).toBeGreaterThan(0);
  });

  it('fires tamper when the switch opens and tamper_cleared when it closes: two event types, once each', () => {
    const active = haEventOf({ type: 'tamper', door: DOOR, fields: { state: 'active', id: 'a-1', seq: 1, at: '2026-11-24T09:00:00.000Z' } });
    const cleared = haEventOf({ type: 'tamper', door: DOOR, fields: { state: 'cleared', id: 'a-2', seq: 2, at: '2026-11-24T09:01:00.000Z' } });
    expect(active).toEqual({
      entity: 'alarm',
      door: DOOR,
      payload: { event_type: 'tamper', state: 'active', id: 'a-1', seq: 1, at: '2026-11-24T09:00:00.000Z' },
    });
    expect(cleared).toMatchObject({ entity: 'alarm', door: DOOR, payload: { event_type: 'tamper_cleared', state: 'cleared' } });
    // A flood's summary is one event, of the type of its last state.
    expect(haEventOf({ type: 'tamper', door: DOOR, fields: { summary: true, count: 40, state: 'cleared' } })?.payload.event_type).toBe('tamper_cleared');
  });

  it('shows who opened, by which level, or why not, with the masked credential and never the holders', () => {
    const granted = haEventOf({
      type: 'access_granted',
      door: DOOR,
      fields: {
        id: 'a-3',
        seq: 3,
        at: '2026-11-24T09:00:03.120Z',
        kind: 'card',
        hint: '…78',
        reason: null,
        who: 'Ada',
        level: 'Staff',
        holders: [{ email_id: 7 }],
      },
    });
    expect(granted).toEqual({
      entity: 'access',
      door: DOOR,
      payload: {
        event_type: 'access_granted',
        who: 'Ada',
        level: 'Staff',
        reason: null,
        kind: 'card',
        credential: '…78',
        id: 'a-3',
        at: '2026-11-24T09:00:03.120Z',
      },
    });
    expect(haEventOf({ type: 'access_denied', door: DOOR, fields: { kind: 'pin', hint: 'PIN', reason: 'lockdown', holders: [] } })?.payload).toEqual({
      event_type: 'access_denied',
      who: null,
      level: null,
      reason: 'lockdown',
      kind: 'pin',
      credential: 'PIN',
    });
  });

  it('says nothing of the events Home Assistant does not show, nor of a door event without a door', () => {
    expect(haEventOf({ type: 'unlocked', door: DOOR, fields: { cause: 'timer' } })).toBeNull();
    expect(haEventOf({ type: 'command_rejected', door: DOOR, fields: {} })).toBeNull();
    expect(haEventOf({ type: 'door_forced', door: null, fields: {} })).toBeNull();
  });

  it("puts the supervision events on the agent's entity, naming the door when they have one", () => {
    expect(haEventOf({ type: 'power_lost', door: null, fields: { at: 'x' } })).toEqual({
      entity: 'supervision',
      door: null,
      payload: { event_type: 'power_lost', at: 'x', door: null },
    });
    expect(haEventOf({ type: 'granted_not_opened', door: DOOR, fields: {} })).toMatchObject({ entity: 'access', door: DOOR });
    expect(haEventOf({ type: 'cache_too_old', door: DOOR, fields: {} })).toMatchObject({ entity: 'supervision', door: null, payload: { door: DOOR } });
  });

  it('publishes a refused remote unlock as unlock_refused with its reason', () => {
    expect(unlockRefusedEvent(DOOR, { reason: 'wrong_code', error: 'wrong Home Assistant code', at: '2026-11-24T09:00:00.000Z' })).toEqual({
      entity: 'access',
      door: DOOR,
      payload: { event_type: 'unlock_refused', reason: 'wrong_code', error: 'wrong Home Assistant code', at: '2026-11-24T09:00:00.000Z' },
    });
  });
});
