import { afterAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
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
});
