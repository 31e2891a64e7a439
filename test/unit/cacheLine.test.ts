import { describe, expect, it } from 'vitest';
import { cacheLine } from '../../src/commands/cacheView.js';
import { count } from '../../src/util/plural.js';

describe("status's cache line", () => {
  it('agrees in number: 1 user, 1 credential, 1 guest link; 0 and 2 are plural', () => {
    expect(cacheLine({ users: 1, credentials: 1, guestLinks: 1 }, null, null)).toBe('cache: 1 user, 1 credential, 1 guest link; never imported or synced');
    expect(cacheLine({ users: 0, credentials: 2, guestLinks: 0 }, null, null)).toBe('cache: 0 users, 2 credentials, 0 guest links; never imported or synced');
    expect(count(1, 'entry', 'entries')).toBe('1 entry');
  });

  it('names the last sync and the last import, the most recent first', () => {
    const imported = { at: '2026-11-24T08:00:00.000Z', file: '/tmp/snap.json' };
    expect(cacheLine({ users: 2, credentials: 2, guestLinks: 0 }, null, '2026-11-24T09:00:00.000Z')).toBe(
      'cache: 2 users, 2 credentials, 0 guest links; last sync 2026-11-24T09:00:00.000Z',
    );
    expect(cacheLine({ users: 2, credentials: 2, guestLinks: 0 }, imported, '2026-11-24T09:00:00.000Z')).toBe(
      'cache: 2 users, 2 credentials, 0 guest links; last sync 2026-11-24T09:00:00.000Z, last import 2026-11-24T08:00:00.000Z from /tmp/snap.json',
    );
  });
});
