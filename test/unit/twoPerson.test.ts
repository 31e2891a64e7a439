import { describe, expect, it } from 'vitest';
import { type TwoPersonWaiting, stillWaiting, twoPersonTap } from '../../src/core/twoPerson.js';

const WINDOW = 15;
const A = ['user:1'];
const B = ['user:2'];

describe('twoPersonTap', () => {
  it('the first tap waits for a second person', () => {
    expect(twoPersonTap(null, A, 1000, WINDOW)).toEqual({ outcome: 'awaiting_second_person', waiting: { holders: A, at: 1000 }, restarted: false });
  });

  it.each([
    ['a different holder within the window unlocks for both', B, 14_999, { outcome: 'complete', first: A, waiting: null }],
    [
      'a different holder once the window has passed is a first tap again',
      B,
      15_000,
      { outcome: 'awaiting_second_person', waiting: { holders: B, at: 15_000 }, restarted: false },
    ],
    ['the same holder again restarts the window', A, 10_000, { outcome: 'awaiting_second_person', waiting: { holders: A, at: 10_000 }, restarted: true }],
    [
      'a credential that names the first holder too (a card on a user and a link) is the same person',
      ['link:x', 'user:1'],
      5000,
      { outcome: 'awaiting_second_person', waiting: { holders: A, at: 5000 }, restarted: true },
    ],
  ] as const)('%s', (_what, holders, now, outcome) => {
    expect(twoPersonTap({ holders: A, at: 0 }, holders, now, WINDOW)).toEqual(outcome);
  });

  it('the first person tapping again keeps the door armed for a second person a full window later', () => {
    let waiting: TwoPersonWaiting | null = null;
    for (const at of [0, 10_000, 20_000]) {
      const r = twoPersonTap(waiting, A, at, WINDOW);
      expect(r.outcome).toBe('awaiting_second_person');
      waiting = r.waiting;
    }
    expect(twoPersonTap(waiting, B, 34_000, WINDOW).outcome).toBe('complete');
  });

  it('every sequence of taps by three people, 0 to 20 s apart: complete exactly when two different people tapped within the window', () => {
    const people = [A, B, ['user:3']];
    const gaps = [0, 7_000, 15_000, 20_000];
    let checked = 0;
    const walk = (waiting: TwoPersonWaiting | null, now: number, first: { who: number; at: number } | null, depth: number) => {
      if (depth === 0) return;
      for (const gap of gaps) {
        for (let who = 0; who < people.length; who++) {
          const at = now + gap;
          const r = twoPersonTap(waiting, people[who]!, at, WINDOW);
          const live = first !== null && at - first.at < WINDOW * 1000 ? first : null;
          const expected = live !== null && live.who !== who ? 'complete' : 'awaiting_second_person';
          if (r.outcome !== expected) throw new Error(`person ${who} at ${at} after ${JSON.stringify(first)}: ${r.outcome}`);
          checked++;
          // After a completion nobody waits; else this tap is the one waiting (a first tap, or the first person again).
          const next = r.outcome === 'complete' ? null : { who, at };
          walk(r.waiting, at, next, depth - 1);
        }
      }
    };
    walk(null, 0, null, 5);
    expect(checked).toBe((12 ** 6 - 1) / 11 - 1);
  });
});

describe('stillWaiting', () => {
  it('forgets the first person once the window has passed', () => {
    const waiting = { holders: A, at: 0 };
    expect(stillWaiting(waiting, 14_999, WINDOW)).toBe(waiting);
    expect(stillWaiting(waiting, 15_000, WINDOW)).toBeNull();
    expect(stillWaiting(null, 0, WINDOW)).toBeNull();
  });
});
