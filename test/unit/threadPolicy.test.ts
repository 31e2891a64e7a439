import { describe, expect, it } from 'vitest';
import { batchHelperThreads, type ThreadScheduler } from '../../src/system/threadPolicy.js';

/** A process's threads as the scheduler sees them; `refuse` says how batch() fails for a thread. */
function scheduler(threads: number[], refuse: Record<number, string> = {}): ThreadScheduler & { batched: number[] } {
  const batched: number[] = [];
  return {
    batched,
    threads: () => threads,
    batch: (tid) => {
      const code = refuse[tid];
      if (code) throw Object.assign(new Error(code === 'ESRCH' ? 'No such process' : 'Operation not permitted'), { code });
      batched.push(tid);
    },
  };
}

describe('batchHelperThreads', () => {
  it('moves every thread but the main one, and counts them', () => {
    const s = scheduler([100, 101, 102, 103]);
    expect(batchHelperThreads(100, s)).toEqual({ batched: 3, failures: [] });
    expect(s.batched).toEqual([101, 102, 103]);
  });

  it('never passes on what is not a thread id (0 would be the calling thread: the main one)', () => {
    const s = scheduler([100, 0, Number.NaN, -3, 101]);
    expect(batchHelperThreads(100, s)).toEqual({ batched: 1, failures: [] });
    expect(s.batched).toEqual([101]);
  });

  it('passes over a thread that ended meanwhile, and names one it may not move without stopping at it', () => {
    const s = scheduler([100, 101, 102, 103], { 101: 'ESRCH', 102: 'EPERM' });
    expect(batchHelperThreads(100, s)).toEqual({ batched: 1, failures: ['thread 102: Operation not permitted'] });
    expect(s.batched).toEqual([103]);
  });

  it('says so when the threads cannot be listed (no /proc), and moves nothing', () => {
    const s: ThreadScheduler = {
      threads: () => {
        throw new Error("ENOENT: no such file or directory, scandir '/proc/self/task'");
      },
      batch: () => {
        throw new Error('not called');
      },
    };
    expect(batchHelperThreads(100, s)).toEqual({
      batched: 0,
      failures: ["cannot list the threads: ENOENT: no such file or directory, scandir '/proc/self/task'"],
    });
  });
});
