import type { ScheduleMemory } from '../core/unlockSchedule.js';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';

/**
 * The door operations' own state in state.db (issue 14), kept across restarts: lockdowns per scope, the holidays
 * published by the service, and each door's schedule memory (first person in, a run suspended by hand).
 */
export interface LockdownRecord {
  active: boolean;
  by: string | null;
  reason: string | null;
  /** Wall ms of the last change. */
  since: number | null;
  /** issued_at (unix s) of the message that set it, for refusing older (replayed) ones; null when unsigned. */
  issuedAt: number | null;
  /** The highest issued_at that came from the future and was clamped (protocol/issuedAt.ts). */
  futureIssuedAt?: number | null;
}

export const NO_LOCKDOWN: LockdownRecord = { active: false, by: null, reason: null, since: null, issuedAt: null };

export interface PublishedHolidays {
  dates: string[];
  issuedAt: number | null;
}

/** `agent` or `door:<uuid>`. */
export function readLockdown(db: Db, scope: string): LockdownRecord | undefined {
  return readMeta<LockdownRecord>(db, `lockdown:${scope}`);
}

export function writeLockdown(db: Db, scope: string, record: LockdownRecord): void {
  writeMeta(db, `lockdown:${scope}`, record);
}

export function readPublishedHolidays(db: Db): PublishedHolidays | undefined {
  return readMeta<PublishedHolidays>(db, 'holidays:published');
}

export function writePublishedHolidays(db: Db, holidays: PublishedHolidays): void {
  writeMeta(db, 'holidays:published', holidays);
}

export function readScheduleMemory(db: Db, doorUuid: string): ScheduleMemory | undefined {
  return readMeta<ScheduleMemory>(db, `schedule:${doorUuid}`);
}

export function writeScheduleMemory(db: Db, doorUuid: string, memory: ScheduleMemory): void {
  writeMeta(db, `schedule:${doorUuid}`, memory);
}
