import { describe, expect, it } from 'vitest';
import type { DecisionMetrics } from '../../src/door/credentialFlow.js';
import type { FeedbackKind } from '../../src/door/options.js';
import { ALICE_CARD, ALICE_PIN, GUEST_TOKEN, useDoorRuntime } from './doorRuntimeHarness.js';

// An attacker at the reader's wire: the pace (core/readerPace.ts) bounds the card and token decisions a reader
// makes, however fast its line delivers frames, and every attempt refused for a lockout or the pace is shown at
// the reader. A real DoorRuntime over a real SQLite cache and audit log, on a manual clock.

const setup = useDoorRuntime();
type Runtime = ReturnType<typeof setup>;

/** What the reader is told to show, with the monotonic time of each. */
function shown(t: Runtime): Array<{ at: number; kind: FeedbackKind }> {
  const list: Array<{ at: number; kind: FeedbackKind }> = [];
  t.runtime.setFeedback((kind) => list.push({ at: t.time.monoNow(), kind }));
  return list;
}

const decisions = (t: Runtime) => t.all().filter((e) => e.reason === 'unknown_credential').length;

/** `count` unknown cards, `perSecond` a second (a serial line at 115200 baud carries about 945), on whole ms. */
function flood(t: Runtime, count: number, perSecond: number, first = 9_400_000): void {
  for (let i = 0; i < count; i++) {
    t.card(String(first + i));
    t.time.advance(Math.round(((i + 1) * 1000) / perSecond) - Math.round((i * 1000) / perSecond));
  }
}

describe('the pace bounds the card decisions of a reader under a flood', () => {
  it('500 unknown cards at wire speed: at most 5 decisions at once and 5 a second, the rest one summary; a valid card 2 s later is granted', () => {
    const t = setup();
    const start = t.time.monoNow();
    flood(t, 500, 945);
    const seconds = (t.time.monoNow() - start) / 1000;
    expect(decisions(t)).toBeLessThanOrEqual(5 + Math.floor(5 * seconds));
    expect(decisions(t)).toBeGreaterThanOrEqual(5);
    expect(t.types()).not.toContain('card_locked_out'); // too few decisions in half a second to start the lockout
    // The frames refused by the pace: no event of their own, one summary a second after the flood.
    expect(t.all()).toHaveLength(decisions(t));
    t.time.advance(2_000);
    expect(t.last('access_denied')).toMatchObject({ kind: 'card', reason: 'card_locked_out', holders: [], count: 500 - decisions(t) });
    t.card(ALICE_CARD);
    expect(t.last('access_granted')).toMatchObject({ kind: 'card', holders: [{ email_id: 101, reason: null }] });
    expect(t.relay.writes).toEqual([0, 1]);
  });

  it('guest tokens are paced with the cards; PINs are not (the keypad lockout bounds them)', () => {
    const t = setup();
    for (let i = 0; i < 10; i++) t.frame({ kind: 'token', value: `no-such-guest-token-${i}` });
    expect(t.all().filter((e) => e.reason === 'unknown_credential')).toHaveLength(5);
    t.frame({ kind: 'token', value: GUEST_TOKEN }); // the pace is spent: refused without a lookup
    expect(t.types()).not.toContain('access_granted');
    t.pin(ALICE_PIN);
    expect(t.last('access_granted')).toMatchObject({ kind: 'pin' });
    t.time.advance(200);
    t.frame({ kind: 'token', value: GUEST_TOKEN });
    expect(t.last('access_granted')).toMatchObject({ kind: 'token' });
  });

  it('a refusal by the pace is counted as a card lockout refusal in the metrics', () => {
    const reasons: string[] = [];
    const metrics: DecisionMetrics = { granted: () => {}, denied: (reason) => void reasons.push(reason) };
    const t = setup({}, { metrics });
    for (let i = 0; i < 8; i++) t.card(String(9_500_000 + i));
    expect(reasons).toEqual([...Array(5).fill('unknown_credential'), ...Array(3).fill('card_locked_out')]);
  });

  it('a continuous flood at 1,000 cards a second: 20 decisions per 33 s cycle (lockout 30 s, open 3 s), and 23 events', () => {
    const t = setup();
    flood(t, 101_000, 1_000); // 101 s
    // Locked out at 1 s (the tenth decision) and at 34, 67 and 100 s; open 3 s before each: 10 + 3 × (5 + 15).
    expect(t.all().filter((e) => e.type === 'card_locked_out')).toHaveLength(4);
    expect(decisions(t)).toBe(70);
    // Per cycle: its 20 decisions, the lockout, its first refusal recorded, and the summary of the rest.
    expect(t.all().length).toBeLessThanOrEqual(70 + 4 * 3);
    const summarized = t
      .all()
      .filter((e) => e.type === 'access_denied' && e.count !== undefined)
      .reduce((sum, e) => sum + (e.count as number), 0);
    expect(summarized).toBeGreaterThan(90_000);
  }, 120_000);

  it('a flood that locked the reader out: a valid card is granted once the lockout has ended, 3 s after the flood', () => {
    const t = setup();
    flood(t, 500, 93); // 9600 baud, 5.4 s
    expect(t.types()).toContain('card_locked_out');
    t.time.advance(2_000);
    t.card(ALICE_CARD); // still within quietSeconds of the last guess
    expect(t.types()).not.toContain('access_granted');
    t.time.advance(1_000);
    t.card(ALICE_CARD);
    expect(t.last('access_granted')).toMatchObject({ kind: 'card' });
  });
});

describe('every attempt refused for a lockout or the pace is shown at the reader, at most every 500 ms', () => {
  it('card lockout: a valid card tapped during it sees lockedOut each time, not a dead reader', () => {
    const t = setup();
    const signals = shown(t);
    for (let i = 0; i < 10; i++) {
      t.card(String(9_600_000 + i));
      t.time.advance(300);
    }
    expect(t.types()).toContain('card_locked_out');
    signals.length = 0;
    // Her taps do not prolong the lockout (it ends 3 s after the last guess): four within it, each shown.
    for (let i = 0; i < 4; i++) {
      t.time.advance(600);
      t.card(ALICE_CARD);
    }
    expect(signals.map((s) => s.kind)).toEqual(Array(4).fill('lockedOut'));
    // Events as before: the lockout's first refusal, the rest summarized when it ends.
    expect(t.all().filter((e) => e.type === 'access_denied' && e.reason === 'card_locked_out')).toHaveLength(1);
  });

  it('keypad lockout: every PIN refused during it is shown', () => {
    const t = setup({ keypadLockout: { failures: 3, windowSeconds: 60, lockoutSeconds: 60 } });
    const signals = shown(t);
    for (const wrong of ['9999', '8888', '7777']) t.pin(wrong);
    expect(t.types()).toContain('keypad_locked_out');
    signals.length = 0;
    for (let i = 0; i < 4; i++) {
      t.time.advance(600);
      t.pin(ALICE_PIN);
    }
    expect(signals.map((s) => s.kind)).toEqual(Array(4).fill('lockedOut'));
  });

  it('a flood of 1,000 frames a second: lockedOut at most every 500 ms, the paced decisions still shown as deny', () => {
    const t = setup();
    const signals = shown(t);
    flood(t, 5_000, 1_000);
    const lockedOut = signals.filter((s) => s.kind === 'lockedOut').map((s) => s.at);
    for (let i = 1; i < lockedOut.length; i++) expect(lockedOut[i]! - lockedOut[i - 1]!).toBeGreaterThanOrEqual(500);
    expect(lockedOut.length).toBeGreaterThanOrEqual(9); // about two a second for 5 s
    expect(signals.filter((s) => s.kind === 'deny')).toHaveLength(decisions(t));
  });
});
