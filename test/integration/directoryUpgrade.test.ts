import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openServiceSqlite } from '../../src/service/database.js';
import { SERVICE_MIGRATIONS } from '../../src/service/migrations.js';
import { tempDir } from '../support/cli.js';
import { SqliteDb } from '../../src/service/sql/sqliteDb.js';
import { seedUsers, serviceOn } from '../support/directorySeed.js';

// Issue 52 item 3, on SQLite's own file: a service.db of the schema version before directory_pending, opened by
// this version, gets every user into its first revision, as the pass over every user did.

const tmp = tempDir('door-agent-directory-upgrade-');
const FINGERPRINTED = 'door_agent_service_directory_users_fingerprinted_total';
type Delta = { revision: number; full: boolean; users: Array<{ email_id: number; groups: string[][] }>; details: Record<string, { smartcards: unknown[] }> };

describe('a database of the previous schema version', () => {
  it('opened by this version: every user in the first revision, as the pass over every user gave them', async () => {
    const file = join(tmp.path, 'upgraded.db');
    const step = SERVICE_MIGRATIONS.findIndex((sql) => sql.includes('directory_pending'));
    expect(step).toBeGreaterThan(0);
    const old = new Database(file);
    for (const sql of SERVICE_MIGRATIONS.slice(0, step)) old.exec(sql);
    old.pragma(`user_version = ${step}`);
    old.close();
    // More than a batch of memberships is read per user (the many-users reader), and one user removed before.
    const seeding = new SqliteDb(new Database(file));
    await seedUsers(seeding, 300);
    seeding.connection.close();
    const again = new Database(file);
    again.prepare("INSERT INTO groups (group_id, type, name) VALUES (1, 'users', 'Staff')").run();
    again.prepare('INSERT INTO group_members (group_id, member_id) SELECT 1, email_id FROM users').run();
    again.prepare("UPDATE users SET removed_at = '2026-02-01 00:00:00' WHERE email_id = 300").run();
    again.close();

    const service = await serviceOn(openServiceSqlite(file));
    try {
      const first = (await service.call('GET', '/directory?since=0')) as unknown as Delta;
      expect(first.revision).toBe(1);
      expect(first.full).toBe(false);
      expect(first.users.map((u) => u.email_id)).toEqual(Array.from({ length: 299 }, (_, i) => i + 1));
      expect(first.users[0]!.groups).toEqual([['Staff']]);
      expect(first.details['1']!.smartcards).toEqual([{ number: '1000000', label: 'badge' }]);
      expect(await service.metric(FINGERPRINTED)).toBe(299);
      // Reconciled: nothing is left to do, so nothing more is fingerprinted and the revision stays.
      const again = (await service.call('GET', '/directory?since=1')) as unknown as Delta;
      expect(again.revision).toBe(1);
      expect(again.users).toEqual([]);
    } finally {
      await service.served.close();
      await service.app.close();
      await service.db.close();
    }
  });
});

afterAll(() => tmp.cleanup());
