import { describe, expect, it } from 'vitest';
import { clockTime } from '../../src/demo/clockTime.js';
import { ACCEPTED_INPUT, formatEvent } from '../../src/demo/narrator.js';
import { EMERGENCY_ACTIVE_LOG, EMERGENCY_NORMAL_LOG } from '../../src/door/emergencyInput.js';

// The demo's sentences name each credential once, as a person says it (the log carries kind and hint).
const berlin = clockTime('Europe/Berlin');
const line = (entry: Record<string, unknown>) => formatEvent(JSON.stringify({ level: 30, ...entry }), berlin)?.trim();

describe('demo narrator', () => {
  it('names a card by its hint, a PIN and a QR token by what they are', () => {
    expect(line({ msg: 'access granted', kind: 'card', hint: '…78' })).toBe('GRANTED  card …78');
    expect(line({ msg: 'access granted', kind: 'pin', hint: 'PIN' })).toBe('GRANTED  PIN');
    expect(line({ msg: 'access denied', kind: 'token', hint: 'token', reason: 'outside_schedule' })).toBe('DENIED   QR token: outside_schedule');
  });

  it('names the credential behind an unlock the same way, and other causes as they are', () => {
    expect(line({ msg: 'unlocked', cause: 'pin PIN', relockAt: null })).toBe('door UNLOCKED (PIN), held open');
    expect(line({ msg: 'unlocked', cause: 'token token', relockAt: null })).toBe('door UNLOCKED (QR token), held open');
    expect(line({ msg: 'unlocked', cause: 'card …78', relockAt: null })).toBe('door UNLOCKED (card …78), held open');
    expect(line({ msg: 'unlocked', cause: 'mqtt', relockAt: null })).toBe('door UNLOCKED (mqtt), held open');
    expect(line({ msg: 'locked', cause: 'timer' })).toBe('door LOCKED (timer)');
  });

  it('tells the fire alarm input and the release it causes', () => {
    expect(line({ msg: 'unlocked', cause: 'emergency release', relockAt: null })).toBe('door UNLOCKED (emergency release), held open');
    expect(line({ level: 40, msg: EMERGENCY_ACTIVE_LOG })).toBe('FIRE ALARM: the emergency input releases the door until it clears');
    expect(line({ level: 40, msg: EMERGENCY_NORMAL_LOG })).toBe('fire alarm cleared');
  });

  it("tells its times in 24-hour form, in the agent's zone, the relock time too", () => {
    // 13:05:09 UTC is 14:05:09 in Berlin in winter (a 12-hour clock would say 2:05:09 PM).
    const at = Date.parse('2026-11-29T13:05:09Z');
    expect(line({ time: at, msg: 'access granted', kind: 'card', hint: '…78' })).toBe('14:05:09  GRANTED  card …78');
    expect(line({ time: at, msg: 'unlocked', cause: 'card …78', relockAt: '2026-11-29T13:05:14.000Z' })).toBe(
      '14:05:09  door UNLOCKED (card …78), relocks at 14:05:14',
    );
    expect(clockTime('America/New_York')(at)).toBe('08:05:09');
  });

  it('answers what the reader dropped as noise (something typed that is no card, PIN or token) with what it accepts', () => {
    expect(line({ level: 40, msg: 'reader noise dropped', bytes: 5, bursts: 1, reasons: ['unrecognized'] })).toBe(ACCEPTED_INPUT);
    expect(ACCEPTED_INPUT).toMatch(/card number .*PIN ending with # .*QR token/);
  });
});
