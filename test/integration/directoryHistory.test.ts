import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openServiceSqlite } from '../../src/service/database.js';
import { Directory } from '../../src/service/directory.js';
import { markFileFor } from '../../src/service/directoryHistory.js';
import { UserStore } from '../../src/service/users.js';
import { tempDir } from '../support/cli.js';

// The mark file beside service.db (service-history.json) against the database it describes, on real files.
const tmp = tempDir('door-agent-history-');
afterAll(tmp.cleanup);
let n = 0;

/** The service's directory on dir/service.db as a start brings it up (its mark checked). */
async function open(dir: string) {
  const lines: Array<{ level: number; msg: string }> = [];
  const file = join(dir, 'service.db');
  const db = openServiceSqlite(file);
  const pushed: Array<{ history: string }> = [];
  const directory = new Directory(
    db,
    new UserStore(db),
    async (r) => void pushed.push(r),
    pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) }),
    undefined,
    markFileFor(file),
  );
  await directory.start(Date.now());
  return { db, directory, lines, pushed, mark: markFileFor(file)! };
}

function fresh() {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  return dir;
}

describe('the history mark at start', () => {
  it('a new database writes its mark beside it (service.db -> service-history.json) and keeps its history across restarts', async () => {
    const dir = fresh();
    let s = await open(dir);
    expect(s.mark).toBe(join(dir, 'service-history.json'));
    const history = (await s.directory.revision()).history;
    expect(JSON.parse(readFileSync(s.mark, 'utf8'))).toEqual({ history, revision: 0, tag: null });
    await s.db.close();
    s = await open(dir);
    expect((await s.directory.revision()).history).toBe(history);
    expect(s.lines.filter((l) => l.level >= 40)).toEqual([]);
    await s.db.close();
  });

  it('a mark naming another history (a database from before a renewal, or another one) renews the history', async () => {
    const dir = fresh();
    let s = await open(dir);
    const before = await s.directory.revision();
    await s.db.close();
    writeFileSync(join(dir, 'service-history.json'), JSON.stringify({ history: 'f'.repeat(32), revision: 0, tag: null }));
    s = await open(dir);
    const after = (await s.directory.revision()).history;
    expect(after).not.toBe(before.history);
    expect(after).not.toBe('f'.repeat(32));
    expect(s.lines.find((l) => l.level === 40)?.msg).toMatch(/restored or replaced.*in another history/);
    expect(JSON.parse(readFileSync(s.mark, 'utf8'))).toMatchObject({ history: after });
    await s.db.close();
  });

  it('an unreadable mark is said, written again, and renews nothing; no mark (an upgrade) renews nothing', async () => {
    const dir = fresh();
    let s = await open(dir);
    const history = (await s.directory.revision()).history;
    await s.db.close();
    writeFileSync(join(dir, 'service-history.json'), '{"history": 12');
    s = await open(dir);
    expect((await s.directory.revision()).history).toBe(history);
    expect(s.lines.find((l) => l.level === 40)?.msg).toMatch(/mark is not readable/);
    expect(JSON.parse(readFileSync(s.mark, 'utf8'))).toMatchObject({ history });
    await s.db.close();
  });
});
