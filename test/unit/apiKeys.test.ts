import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { openServiceDatabase } from '../../src/service/database.js';
import { tempDir } from '../support/cli.js';

const tmp = tempDir('door-agent-keys-');
afterAll(tmp.cleanup);
const DAY = 86_400_000;

describe('ApiKeys', () => {
  it('verifies a key by its hash only, with its rank; expiry 0 means never; expired keys are refused', () => {
    const db = openServiceDatabase(join(tmp.path, 'service.db'));
    const keys = new ApiKeys(db);
    const now = Date.parse('2026-11-22T10:00:00Z');
    const forever = keys.create('ADMIN', 0, now);
    const week = keys.create('REGULAR', 7, now);
    expect(keys.verify(forever, now + 3650 * DAY)).toBe('ADMIN');
    expect(keys.verify(week, now + 7 * DAY - 1)).toBe('REGULAR');
    expect(keys.verify(week, now + 7 * DAY)).toBeNull();
    expect(keys.verify(`${forever.slice(0, -1)}${forever.endsWith('A') ? 'B' : 'A'}`, now)).toBeNull();
    expect(keys.verify('', now)).toBeNull();
    const stored = JSON.stringify(db.prepare('SELECT * FROM api_keys').all());
    expect(stored).not.toContain(forever.slice(4));
    db.close();
  });
});
