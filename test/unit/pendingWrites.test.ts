import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PendingWrites } from '../../src/store/pendingWrites.js';
import { ManualTime } from '../support/manualTime.js';

const quiet = pino({ level: 'silent' });

/** A store that refuses writes while `busy` (as SQLite does while another process holds the write lock). */
function store() {
  const rows: string[] = [];
  const state = { busy: false };
  const write = (row: string) => () => {
    if (state.busy) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    rows.push(row);
  };
  return { rows, state, write };
}

describe('PendingWrites', () => {
  it('writes at once while the database takes writes', () => {
    const time = new ManualTime();
    const writes = new PendingWrites({ timers: time, logger: quiet });
    const s = store();
    writes.run('a', s.write('a'));
    expect(s.rows).toEqual(['a']);
    expect(writes.pending).toBe(0);
    expect(time.pendingCount).toBe(0);
  });

  it('keeps refused writes in memory, in order, and retries them until the database takes them', () => {
    const time = new ManualTime();
    const writes = new PendingWrites({ timers: time, logger: quiet });
    const s = store();
    s.state.busy = true;
    writes.run('e1', s.write('e1'));
    writes.run('e2', s.write('e2'));
    expect(writes.pending).toBe(2);
    time.advance(10_000); // still busy: retried with backoff, nothing lost
    expect(s.rows).toEqual([]);
    s.state.busy = false;
    writes.run('e3', s.write('e3')); // behind the waiting ones, never ahead of them
    expect(s.rows).toEqual([]);
    time.advance(5000);
    expect(s.rows).toEqual(['e1', 'e2', 'e3']);
    expect(writes.pending).toBe(0);
  });

  it('a write with the same key replaces the one waiting (only the latest state matters)', () => {
    const time = new ManualTime();
    const writes = new PendingWrites({ timers: time, logger: quiet });
    const s = store();
    s.state.busy = true;
    writes.run('runtime', s.write('runtime v1'));
    writes.run('event-1', s.write('event-1'));
    writes.run('runtime', s.write('runtime v2'));
    s.state.busy = false;
    time.advance(5000);
    expect(s.rows).toEqual(['runtime v2', 'event-1']);
  });

  it('bounds memory: past maxPending new writes are refused and counted', () => {
    const time = new ManualTime();
    const writes = new PendingWrites({ timers: time, logger: quiet, maxPending: 3 });
    const s = store();
    s.state.busy = true;
    for (let i = 0; i < 5; i++) writes.run(`e${i}`, s.write(`e${i}`));
    expect([writes.pending, writes.refused]).toEqual([3, 2]);
    s.state.busy = false;
    expect(writes.flush()).toBe(true);
    expect(s.rows).toEqual(['e0', 'e1', 'e2']);
  });
});
