import { describe, expect, it } from 'vitest';
import { deeperThan } from '../../src/protocol/jsonDepth.js';
import { orderIssuedAt } from '../../src/protocol/issuedAt.js';
import { parseHolidaysMessage } from '../../src/protocol/lockdown.js';

const NOW = 1_800_000_000;
const SKEW = 300;

describe('orderIssuedAt: issued_at from the future clamped to now + skew', () => {
  it('orders times within the skew as given', () => {
    expect(orderIssuedAt({ issuedAt: null }, NOW, NOW, SKEW)).toMatchObject({ order: 'newer', clamped: false, next: { issuedAt: NOW, future: null } });
    expect(orderIssuedAt({ issuedAt: NOW }, NOW, NOW, SKEW).order).toBe('same');
    expect(orderIssuedAt({ issuedAt: NOW }, NOW - 1, NOW, SKEW).order).toBe('stale');
    expect(orderIssuedAt({ issuedAt: NOW }, NOW + SKEW, NOW, SKEW)).toMatchObject({ order: 'newer', clamped: false });
  });

  it('clamps a time further ahead, remembers it, and lets a later one overtake', () => {
    const day = orderIssuedAt({ issuedAt: null }, NOW + 86_400, NOW, SKEW);
    expect(day).toMatchObject({ order: 'newer', clamped: true, next: { issuedAt: NOW + SKEW, future: NOW + 86_400 } });
    const held = day.next;
    expect(orderIssuedAt(held, NOW + 10, NOW + 10, SKEW).order).toBe('stale'); // within the skew of its arrival
    expect(orderIssuedAt(held, NOW + SKEW + 1, NOW + SKEW + 1, SKEW)).toMatchObject({
      order: 'newer',
      next: { issuedAt: NOW + SKEW + 1, future: NOW + 86_400 },
    });
    expect(orderIssuedAt(held, NOW + 86_400, NOW + 60, SKEW).order).toBe('same'); // the same message again
    expect(orderIssuedAt(held, NOW + 86_399, NOW + 60, SKEW).order).toBe('stale'); // an older future one
    expect(orderIssuedAt(held, NOW + 86_401, NOW, SKEW).order).toBe('newer'); // the sender's next one, same second
  });
});

describe('JSON depth', () => {
  it('measures nesting without recursion', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(deeperThan(deep)).toBe(true);
    expect(deeperThan({ a: [[[1]]] }, 4)).toBe(false);
    expect(deeperThan({ a: [[[[1]]]] }, 4)).toBe(true);
    expect(deeperThan('text')).toBe(false);
  });

  it('a retained message nested 7,000 deep is refused, not a stack overflow', () => {
    const payload = Buffer.from(`{"dates":[],"x":${'['.repeat(7000)}${']'.repeat(7000)}}`);
    expect(parseHolidaysMessage(payload, 'a-command-secret-of-at-least-32-bytes')).toEqual({ refused: 'nested deeper than 32 levels' });
  });
});
