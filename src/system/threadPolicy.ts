import { access, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { addonPath } from '../util/addonPath.js';
import { errorCode } from '../util/errors.js';

/**
 * The daemon's helper threads under SCHED_BATCH: V8's compiler and garbage-collector helpers, libuv's pool (the
 * disk syncs, decompression), the sync and checkpoint workers. Only the event loop's thread, the one that reads a
 * card and moves the relay, stays SCHED_OTHER.
 *
 * Why: a tap makes V8 optimize the functions it ran, and V8 hands the compile to one of its threads. On a CPU the
 * two share (one core, or every core busy), Linux let that thread preempt the event loop's the moment it woke, in
 * the middle of the tap, for up to 4 ms of the compile (a trace of the scheduler, 2026-11-28: bench/HISTORY.md, "A
 * helper thread in the middle of a tap"). A SCHED_BATCH thread does not preempt on waking; it runs when the event
 * loop's thread yields or its time slice ends, with its nice value and its fair share of the CPU as before, so a
 * helper is never starved (SCHED_IDLE would starve the sync behind any busy process, and with it a revocation).
 */

/** What of the OS the policy needs: the sched_policy addon and /proc (a fake in the unit tests). */
export interface ThreadScheduler {
  /** This process's thread ids (Linux: /proc/self/task). */
  threads(): number[];
  /** Puts thread `tid` (0: the calling thread) under SCHED_BATCH; throws an error with a `code` (ESRCH: it ended). */
  batch(tid: number): void;
}

export interface HelperThreads {
  /** Threads put under SCHED_BATCH. */
  batched: number;
  /** Threads that could not be, each with the reason (a thread that ended meanwhile is not one). */
  failures: string[];
}

interface Addon {
  batch(tid: number): void;
}

let addon: Addon | undefined;

/** The addon built from native/sched_policy.c at `npm ci`, or the error that says how to build it. */
function loadAddon(): Addon | Error {
  if (addon) return addon;
  let path = 'build/Release/sched_policy.node';
  try {
    path = addonPath(import.meta.dirname, 'sched_policy');
    addon = createRequire(import.meta.url)(path) as Addon;
    return addon;
  } catch (err) {
    return new Error(`the sched_policy addon cannot be loaded from ${path} (run npm ci in the door-agent directory to build it): ${String(err)}`);
  }
}

/** Linux's scheduler through the addon, or the error saying why it is not there. */
export function linuxThreadScheduler(): ThreadScheduler | Error {
  const loaded = loadAddon();
  if (loaded instanceof Error) return loaded;
  return {
    threads: () => readdirSync('/proc/self/task').map(Number),
    batch: (tid) => loaded.batch(tid),
  };
}

/** Every thread of the process but the event loop's (`mainTid`, the process id) put under SCHED_BATCH. */
export function batchHelperThreads(mainTid: number, scheduler: ThreadScheduler): HelperThreads {
  const result: HelperThreads = { batched: 0, failures: [] };
  let threads: number[];
  try {
    threads = scheduler.threads();
  } catch (err) {
    result.failures.push(`cannot list the threads: ${err instanceof Error ? err.message : String(err)}`);
    return result;
  }
  for (const tid of threads) {
    // Only a thread id proper: 0 would be the calling thread, the main one when the walk runs.
    if (tid === mainTid || !Number.isInteger(tid) || tid <= 0) continue;
    try {
      scheduler.batch(tid);
      result.batched++;
    } catch (err) {
      if (errorCode(err) === 'ESRCH') continue;
      result.failures.push(`thread ${tid}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return result;
}

/**
 * Resolves once libuv's pool has its threads: it makes them all at its first request, so a small one is made
 * first and the pool's threads are there to be put under SCHED_BATCH.
 */
export function threadPoolStarted(): Promise<void> {
  return new Promise((resolve) => access(process.execPath, () => resolve()));
}

/**
 * The calling thread under SCHED_BATCH: for a worker's own thread, which the daemon's walk at start may not have
 * seen (the sync worker starts at the first sync, and again after it died). Without the addon nothing changes: the
 * daemon has said so at start.
 */
export function batchThisThread(): void {
  const loaded = loadAddon();
  if (loaded instanceof Error) return;
  try {
    loaded.batch(0);
  } catch {
    // As above: the thread keeps SCHED_OTHER, which is only slower for the taps.
  }
}
