import { afterAll, describe, expect, it } from 'vitest';
import { ApiKeys, keyDigest } from '../../src/service/apiKeys.js';
import { tempDir } from '../support/cli.js';
import { newServiceDb } from '../support/serviceDb.js';

const tmp = tempDir('door-agent-keys-');
afterAll(tmp.cleanup);
const DAY = 86_400_000;

describe('ApiKeys', () => {
  it('verifies a key by its hash only, with its rank; expiry 0 means never; expired keys are refused', async () => {
    const { db } = await newServiceDb(tmp.path);
    const keys = new ApiKeys(db);
    const now = Date.parse('2026-11-22T10:00:00Z');
    const forever = await keys.create('ADMIN', 0, now);
    const week = await keys.create('REGULAR', 7, now);
    expect(await keys.verify(forever, now + 3650 * DAY)).toBe('ADMIN');
    expect(await keys.verify(week, now + 7 * DAY - 1)).toBe('REGULAR');
    expect(await keys.verify(week, now + 7 * DAY)).toBeNull();
    expect(await keys.verify(`${forever.slice(0, -1)}${forever.endsWith('A') ? 'B' : 'A'}`, now)).toBeNull();
    expect(await keys.verify('', now)).toBeNull();
    const stored = JSON.stringify(await db.all('SELECT * FROM api_keys'));
    expect(stored).not.toContain(forever.slice(4));
    await db.close();
  });

  it('a SCIM token (scope scim) opens /scim/v2 only: verify and verifyDigest refuse it, verifyScim takes nothing else', async () => {
    const { db } = await newServiceDb(tmp.path, 'scopes');
    const keys = new ApiKeys(db);
    const now = Date.parse('2026-11-22T10:00:00Z');
    const scim = await keys.create('ADMIN', 30, now, 'scim');
    const api = await keys.create('ADMIN', 0, now);
    expect(await keys.verifyScim(scim, now)).toBe('ADMIN');
    expect(await keys.verify(scim, now)).toBeNull();
    expect(await keys.verifyDigest(keyDigest(scim), now)).toBeNull();
    expect(await keys.verifyScim(api, now)).toBeNull();
    expect(await keys.verify(api, now)).toBe('ADMIN');
    expect(await keys.verifyScim(scim, now + 30 * DAY)).toBeNull();
    // Inside a transaction (a route's), the same answers from that transaction's connection.
    expect(await db.transaction(async () => [await keys.verifyScim(scim, now), await keys.verify(scim, now)])).toEqual(['ADMIN', null]);
    await db.close();
  });
});
