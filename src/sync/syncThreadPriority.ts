import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** How much lower than the daemon a sync thread runs (nice +10: it gets the CPU the door does not need). */
const SYNC_NICENESS = 10;

/**
 * The sync is background work: the thread that calls this gets a smaller share of the CPU than the door's main
 * thread whenever both want it, so a tap on a busy two-core board is not kept waiting behind validation and staging
 * for long (Linux applies setpriority to the one thread whose id it is given). What keeps the sync from preempting
 * the door's thread when it wakes is its scheduling policy (system/threadPolicy.ts); nice alone did not. Anywhere
 * else, or if refused, the sync simply runs at normal priority.
 */
export function yieldCpuToTheDoor(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, Math.min(19, getPriority(threadId) + SYNC_NICENESS));
  } catch {
    // not Linux, or not permitted: a normal priority
  }
}
