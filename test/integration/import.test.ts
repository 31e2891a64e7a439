import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { dumpCache, installWriteCounter, sha256File } from '../support/db.js';
import { exampleSnapshot, writeSnapshot } from '../support/snapshot.js';
import { sleep } from '../support/wait.js';

const tmp = tempDir();
afterAll(tmp.cleanup);

let dir: string;
let config: string;
let cache: string;
let n = 0;
beforeEach(() => {
  dir = join(tmp.path, `case-${n++}`);
  cache = join(dir, 'data', 'cache.db');
});

function prepare(): void {
  mkdirSync(dir, { recursive: true });
  config = writeConfig(dir);
}

function importFile(file: string, ...flags: string[]) {
  return runCli(['import', file, '--config', config, ...flags]);
}

function importExample(): void {
  prepare();
  const r = importFile(writeSnapshot(dir, 'good.json', exampleSnapshot()));
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
}

describe('door-agent import', () => {
  it('loads users, credentials and guest links and reports the counts', () => {
    prepare();
    const r = importFile(writeSnapshot(dir, 'good.json', exampleSnapshot()), '--json');
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.users).toEqual({ added: 5, changed: 0, removed: 0, unchanged: 0 });
    expect(summary.credentials).toEqual({ added: 7, changed: 0, removed: 0, unchanged: 0 });
    expect(summary.guestLinks).toEqual({ added: 1, changed: 0, removed: 0, unchanged: 0 });
    const db = new Database(cache, { readonly: true });
    // Numbers are normalized (leading zeros dropped); the magic token is stored only as a digest.
    expect(db.prepare("SELECT holder_id FROM credentials WHERE number = '4213578'").pluck().all()).toEqual(['101']);
    const links = db.prepare('SELECT * FROM guest_links').all() as Array<Record<string, unknown>>;
    expect(JSON.stringify(links)).not.toContain('guest-token-carol-0001');
    db.close();
  });

  it('a second import of the same file rewrites no rows', () => {
    importExample();
    const writes = installWriteCounter(cache);
    const file = writeSnapshot(dir, 'again.json', exampleSnapshot());
    const r = importFile(file);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('(0 rows written)');
    expect(writes()).toBe(0);

    // A single changed field rewrites exactly that user's row and the copy of it on the user's one card.
    const changed = exampleSnapshot();
    changed.users[3]!.groups = [['Staff']];
    const r2 = importFile(writeSnapshot(dir, 'changed.json', changed), '--json');
    expect(r2.status).toBe(0);
    expect(JSON.parse(r2.stdout)).toMatchObject({ users: { changed: 1, unchanged: 4 }, credentials: { changed: 1, unchanged: 6 } });
    expect(writes()).toBe(2);
  });

  it('applies removals and changes, and refuses a mass removal unless allowed', () => {
    importExample();
    const small = exampleSnapshot();
    small.users = small.users.slice(0, 1);
    small.details = { '101': small.details['101']! };
    small.guest_links = [];
    const file = writeSnapshot(dir, 'small.json', small);
    const before = dumpCache(cache);
    let r = importFile(file);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('would remove 5 of 7 credentials');
    expect(r.stderr).toContain('--allow-mass-removal');
    expect(dumpCache(cache)).toBe(before);

    r = importFile(file, '--allow-mass-removal', '--json');
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.users.removed).toBe(4);
    expect(summary.credentials.removed).toBe(5);
    expect(summary.guestLinks.removed).toBe(1);
  });

  describe('bad input: one clear message, exit 1, cache unchanged', () => {
    function expectRefused(file: string, ...messages: string[]): void {
      importExample();
      const before = dumpCache(cache);
      const r = importFile(file);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toContain('was not imported, the cache is unchanged');
      for (const m of messages) expect(r.stderr).toContain(m);
      expect(dumpCache(cache)).toBe(before);
    }

    it('a wrong type deep inside one user', () => {
      const s = exampleSnapshot();
      (s.users[2]!.groups as unknown[][]) = [['Staff', 7]];
      s.details['104']!.smartcards = [{ number: 4213580 }];
      expectRefused(
        writeSnapshot(tmp.path, 'deep.json', s),
        '$.users[2].groups[0][1]: expected string, received number',
        '$.details["104"].smartcards[0].number: expected string, received number',
      );
    });

    it('smartcard numbers that are not integer strings, bad dates', () => {
      const s = exampleSnapshot();
      s.details['101']!.smartcards = [{ number: '12 34' }];
      s.users[0]!.created = '2025-13-01 00:00:00';
      expectRefused(
        writeSnapshot(tmp.path, 'numbers.json', s),
        '$.details["101"].smartcards[0].number: expected a string holding an integer',
        '$.users[0].created: expected a UTC date "YYYY-MM-DD hh:mm:ss"',
      );
    });

    it('a time_mapping with 6 elements and an hour of 25', () => {
      const s = exampleSnapshot();
      const link = s.guest_links![0]!;
      link.time_mapping = [[], [[9, 17]], [[9, 17]], [[9, 17]], [[9, 25]], [[9, 17]]];
      expectRefused(
        writeSnapshot(tmp.path, 'mapping.json', s),
        '$.guest_links[0].time_mapping: expected exactly 7 elements',
        '$.guest_links[0].time_mapping[4][0][1]: hours run from 0 to 24',
      );
    });

    it('a guest link ending before it starts, and a duplicate user', () => {
      const s = exampleSnapshot();
      s.guest_links![0]!.end_time = '2025-06-01 00:00:00';
      expectRefused(writeSnapshot(tmp.path, 'dates.json', s), '$.guest_links[0].end_time: is not after start_time');
      const d = exampleSnapshot();
      d.users.push({ ...d.users[0]! });
      expectRefused(writeSnapshot(tmp.path, 'dup.json', d), '$.users[5].email_id: duplicate email_id 101');
    });

    it('a user without details and details without a user', () => {
      const s = exampleSnapshot();
      delete s.details['105'];
      s.details['999'] = { smartcards: [] };
      expectRefused(
        writeSnapshot(tmp.path, 'orphans.json', s),
        '$.details["105"]: missing: user 105 is listed in $.users',
        '$.details["999"]: no user with email_id 999 in $.users',
      );
    });

    it('a truncated file', () => {
      const text = JSON.stringify(exampleSnapshot());
      expectRefused(writeSnapshot(tmp.path, 'truncated.json', text.slice(0, Math.floor(text.length * 0.6))), 'truncated');
    });

    it('a 50 MB file of garbage', () => {
      const file = join(tmp.path, 'garbage.bin');
      writeFileSync(file, randomBytes(50 * 1024 * 1024));
      expectRefused(file, 'not a valid snapshot: expected a JSON object');
    });

    it('the same email_id twice in details (a later entry must not be silently ignored)', () => {
      const text = JSON.stringify(exampleSnapshot()).replace('"details":{', '"details":{"101":{"smartcards":[{"number":"555"}]},');
      expectRefused(writeSnapshot(tmp.path, 'dupdetail.json', text), '$.details["101"]: a second entry for email_id 101');
    });

    it('broken JSON inside a value is located without quoting the value (it may hold a card number)', () => {
      const text = JSON.stringify(exampleSnapshot()).replace('{"number":"4213580"', '{"number":\'42135809\'');
      importExample();
      const r = importFile(writeSnapshot(tmp.path, 'quote.json', text));
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/\$\.details\["104"\]: not valid JSON/);
      expect(r.stderr).not.toContain('4213580');
    });

    it('an unknown top-level member that is not valid JSON', () => {
      const text = JSON.stringify(exampleSnapshot()).replace('"users":', '"junk": {"a": tru},"users":');
      expectRefused(writeSnapshot(tmp.path, 'junk.json', text), '$.junk: not valid JSON');
    });

    it('JSON that is not a snapshot', () => {
      expectRefused(writeSnapshot(tmp.path, 'array.json', '[1, 2, 3]'), 'expected a JSON object');
      expectRefused(writeSnapshot(tmp.path, 'nousers.json', '{"details": {}}'), '$.users: required');
      expectRefused(writeSnapshot(tmp.path, 'wrongusers.json', '{"users": 5, "details": {}}'), '$.users: expected an array');
      expectRefused(writeSnapshot(tmp.path, 'trailing.json', '{"users": [], "details": {}} x'), "unexpected 'x' after the end");
    });
  });

  it('a cache locked by another writer: refused after the busy timeout, nothing half-applied', () => {
    importExample();
    const before = dumpCache(cache);
    const holder = new Database(cache);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const changed = exampleSnapshot();
      changed.users[0]!.ad_status = 'SUSPENDED';
      const r = importFile(writeSnapshot(dir, 'busy.json', changed));
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('the cache is unchanged: database is locked');
      expect(r.stderr).toContain('another door-agent process is writing the cache');
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect(dumpCache(cache)).toBe(before);
  });

  it('holds the write lock only for the merge, not while the file is read and checked (a daemon keeps writing)', async () => {
    importExample();
    const users = [];
    const details: Record<string, unknown> = {};
    for (let i = 1; i <= 30_000; i++) {
      users.push({ email_id: i, ad_status: 'ACTIVE', groups: [['Staff']], name: `User ${i}`, email: `u${i}@example.org` });
      details[i] = {
        policies: [],
        smartcards: [
          { number: String(10_000_000 + i), label: 'badge' },
          { number: String(1000 + i), label: 'PIN' },
        ],
      };
    }
    const file = writeSnapshot(dir, 'large.json', JSON.stringify({ users, details }));
    const watcher = new Database(cache);
    watcher.pragma('busy_timeout = 0');
    let lockedSince: number | null = null;
    let longestLocked = 0;
    let done = false;
    const importing = runCliAsync(['import', file, '--json', '--allow-mass-removal', '--config', config]).finally(() => (done = true));
    try {
      while (!done) {
        try {
          watcher.exec('BEGIN IMMEDIATE');
          watcher.exec('ROLLBACK');
          if (lockedSince !== null) longestLocked = Math.max(longestLocked, performance.now() - lockedSince);
          lockedSince = null;
        } catch {
          lockedSince ??= performance.now();
        }
        await sleep(2);
      }
    } finally {
      watcher.close();
    }
    const r = await importing;
    expect(r.status, r.stderr).toBe(0);
    const { durationMs } = JSON.parse(r.stdout) as { durationMs: number };
    // Reading and validating 30,000 users is most of the work; only the merge may hold the lock.
    expect(longestLocked).toBeLessThan(durationMs * 0.5);
  });

  it('creates the cache and its WAL files readable by the owner only (they hold card numbers)', () => {
    importExample();
    const db = new Database(cache); // keeps the WAL open while we look
    try {
      db.prepare('SELECT count(*) FROM users').get();
      for (const file of [cache, `${cache}-wal`, `${cache}-shm`]) expect((statSync(file).mode & 0o777).toString(8), file).toBe('600');
    } finally {
      db.close();
    }
  });

  it('a missing snapshot file is named', () => {
    prepare();
    const r = importFile(join(dir, 'nope.json'));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cannot read snapshot ${join(dir, 'nope.json')}: no such file`);
  });

  it('a cache file that is not SQLite is reported and left untouched', () => {
    prepare();
    mkdirSync(join(dir, 'data'), { recursive: true });
    writeFileSync(cache, 'this is not a database, but somebody may want it back\n'.repeat(100));
    const before = sha256File(cache);
    const r = importFile(writeSnapshot(dir, 'good.json', exampleSnapshot()));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${cache} is not a door-agent cache (not a SQLite database)`);
    expect(r.stderr).toContain('move it aside');
    expect(sha256File(cache)).toBe(before);
    const check = runCli(['check', '4213578', '--config', config]);
    expect(check.status).toBe(1);
    expect(check.stderr).toContain('not a SQLite database');
    expect(sha256File(cache)).toBe(before);
    expect(readFileSync(cache, 'utf8').startsWith('this is not a database')).toBe(true);
  });
});
