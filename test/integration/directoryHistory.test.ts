import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openServiceDatabase } from '../../src/service/database.js';
import { Directory } from '../../src/service/directory.js';
import { markFileFor } from '../../src/service/directoryHistory.js';
import { UserStore } from '../../src/service/users.js';
import { tempDir } from '../support/cli.js';

// The mark file beside service.db (service-history.json) against the database it describes, on real files.
const tmp = tempDir('door-agent-history-');
afterAll(tmp.cleanup);
let n = 0;

function open(dir: string) {
  const lines: Array<{ level: number; msg: string }> = [];
  const db = openServiceDatabase(join(dir, 'service.db'));
  const pushed: Array<{ history: string }> = [];
  const directory = new Directory(
    db,
    new UserStore(db),
    (r) => pushed.push(r),
    pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) }),
  );
  return { db, directory, lines, pushed, mark: markFileFor(db)! };
}

function fresh() {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  return dir;
}

describe('the history mark at start', () => {
  it('a new database writes its mark beside it (service.db -> service-history.json) and keeps its history across restarts', () => {
    const dir = fresh();
    let s = open(dir);
    expect(s.mark).toBe(join(dir, 'service-history.json'));
    const history = s.directory.revision().history;
    expect(JSON.parse(readFileSync(s.mark, 'utf8'))).toEqual({ history, revision: 0, tag: null });
    s.db.close();
    s = open(dir);
    expect(s.directory.revision().history).toBe(history);
    expect(s.lines.filter((l) => l.level >= 40)).toEqual([]);
    s.db.close();
  });

  it('a mark naming another history (a database from before a renewal, or another one) renews the history', () => {
    const dir = fresh();
    let s = open(dir);
    const before = s.directory.revision();
    s.db.close();
    writeFileSync(join(dir, 'service-history.json'), JSON.stringify({ history: 'f'.repeat(32), revision: 0, tag: null }));
    s = open(dir);
    const after = s.directory.revision().history;
    expect(after).not.toBe(before.history);
    expect(after).not.toBe('f'.repeat(32));
    expect(s.lines.find((l) => l.level === 40)?.msg).toMatch(/restored or replaced.*in another history/);
    expect(JSON.parse(readFileSync(s.mark, 'utf8'))).toMatchObject({ history: after });
    s.db.close();
  });

  it('an unreadable mark is said, written again, and renews nothing; no mark (an upgrade) renews nothing', () => {
    const dir = fresh();
    let s = open(dir);
    const history = s.directory.revision().history;
    s.db.close();
    writeFileSync(join(dir, 'service-history.json'), '{"history": 12');
    s = open(dir);
    expect(s.directory.revision().history).toBe(history);
    expect(s.lines.find((l) => l.level === 40)?.msg).toMatch(/mark is not readable/);
    expect(JSON.parse(readFileSync(s.mark, 'utf8'))).toMatchObject({ history });
    s.db.close();
  });
});
