import { describe, expect, it } from 'vitest';
import type { DecisionMetrics } from '../../src/door/credentialFlow.js';
import { ALICE_CARD, ALICE_PIN, BOB_CARD, useDoorRuntime } from './doorRuntimeHarness.js';

// What a door tells the agent's metrics (src/metrics/): one count per decision, as the audit log has them, and a
// grant only once its relay has moved; nothing of the credential.

const setup = useDoorRuntime();

/**
 * The metrics' view: each call in order, with the relay's last level when a grant was reported and its tap to
 * relay (on the injected clock: the manual one does not move between the tap and the relay write).
 */
function recorder(relay: () => number | undefined) {
  const calls: string[] = [];
  const metrics: DecisionMetrics = {
    granted: (seconds) => void calls.push(`granted relay=${relay()} after ${seconds} s`),
    denied: (reason) => void calls.push(`denied ${reason}`),
  };
  return { calls, metrics };
}

describe('decision metrics', () => {
  it('a grant is reported after the relay moved; refusals with their reason code, never the credential', () => {
    let relay: number[] = [];
    const { calls, metrics } = recorder(() => relay.at(-1));
    const t = setup({}, { metrics });
    relay = t.relay.writes;
    t.card(ALICE_CARD);
    t.card(BOB_CARD);
    t.card('9999999');
    t.pin(ALICE_PIN);
    expect(calls).toEqual(['granted relay=1 after 0 s', 'denied user_suspended', 'denied unknown_credential', 'granted relay=1 after 0 s']);
    expect(calls.join()).not.toMatch(/4213578|4213579|9999999|1234/);
  });

  it('card_and_pin: the card waiting for its PIN is no decision; the PIN is; a wait that runs out is a refusal', () => {
    let relay: number[] = [];
    const { calls, metrics } = recorder(() => relay.at(-1));
    const t = setup({ mode: 'card_and_pin' }, { metrics });
    relay = t.relay.writes;
    t.card(ALICE_CARD);
    expect(calls).toEqual([]);
    t.pin(ALICE_PIN);
    t.card(ALICE_CARD);
    t.time.advance(10_000);
    expect(calls).toEqual(['granted relay=1 after 0 s', 'denied not_authorized']);
  });

  it('every attempt refused during a lockout counts, though the audit log keeps one and a summary', () => {
    const { calls, metrics } = recorder(() => undefined);
    const t = setup({ cardLockout: { failures: 3, windowSeconds: 60, lockoutSeconds: 30, quietSeconds: 3 } }, { metrics });
    for (let i = 0; i < 3; i++) t.card(String(9_000_000 + i));
    for (let i = 0; i < 10; i++) t.card(String(8_000_000 + i));
    expect(calls.filter((c) => c === 'denied unknown_credential')).toHaveLength(3);
    expect(calls.filter((c) => c === 'denied card_locked_out')).toHaveLength(10);
    expect(t.types().filter((type) => type === 'access_denied')).toHaveLength(4);
  });

  it('a cache that cannot be read: each tap a refusal, cache_unreadable', () => {
    const { calls, metrics } = recorder(() => undefined);
    const t = setup({}, { metrics });
    t.db.close();
    t.card(ALICE_CARD);
    expect(calls).toEqual(['denied cache_unreadable']);
  });
});
