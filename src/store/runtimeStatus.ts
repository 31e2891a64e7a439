import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';

/** What the running daemon reports about itself for `door-agent status` (another process). */
export interface RuntimeStatus {
  pid: number;
  startedAt: string;
  stoppedAt: string | null;
  /** Per reader (readerStatusKey): whether it is connected (absent: no reader configured). */
  readers: Record<string, boolean>;
  /** Per reader (readerStatusKey): an OSDP reader's secure channel now (plain, pending, secure, failed). */
  readerChannels?: Record<string, string>;
  /** Per reader (readerStatusKey): what it said it is when it last came online (a PN532's "PN532 v1.6"). */
  readerIdentities?: Record<string, string>;
  /** The last directory revision pushed over MQTT (absent: none arrived since the daemon started). */
  push?: { lastRevision: number | null; at: string };
  /** Topics the broker refuses this agent (its ACL): until a later publish or subscription there succeeds. */
  refused?: BrokerRefusal[];
  /** The power inputs (the power section): null for one not configured; absent without the section. */
  power?: { mains: 'present' | 'lost' | null; battery: 'ok' | 'low' | null };
  /** The emergency input as the daemon reads it (absent without one). */
  emergency?: EmergencyRuntime;
  /** The cache found damaged, or rebuilt (absent: sound since the daemon started). */
  cache?: CacheRuntime;
}

/** The cache as the daemon holds it (ISO times): damaged since, with what SQLite said; or rebuilt, the damaged file kept as. */
export interface CacheRuntime {
  damagedSince: string | null;
  error: string | null;
  /** While damaged: the last attempt to rebuild it that failed (null: none yet). */
  lastAttempt?: { at: string; error: string } | null;
  rebuiltAt: string | null;
  keptAs: string | null;
}

/** The emergency (fire alarm) input: its reading, whether its doors are released, a wiring fault reported. */
export interface EmergencyRuntime {
  reading: 'normal' | 'alarm' | 'wiring_open' | 'wiring_short';
  active: boolean;
  /** Since when it reads that (ISO). */
  since: string;
  wiringFault: 'open' | 'short' | null;
}

/** A topic the broker refused (MQTT 5 PUBACK or SUBACK reason code >= 0x80). */
export interface BrokerRefusal {
  topic: string;
  kind: 'publish' | 'subscribe';
  /** e.g. 135 (0x87) not authorized. */
  reasonCode: number;
  reason: string;
  /** When it was first refused (ISO). */
  since: string;
}

const KEY = 'runtime';

/**
 * A reader's key in `readers` and `readerChannels`: the door's uuid for its entry reader (the only key before doors
 * had exit readers, so an older daemon's row still reads right), `<uuid>/exit` for its exit reader.
 */
export function readerStatusKey(doorUuid: string, direction: 'entry' | 'exit'): string {
  return direction === 'exit' ? `${doorUuid}/exit` : doorUuid;
}

export function readRuntimeStatus(db: Db): RuntimeStatus | undefined {
  return readMeta<RuntimeStatus>(db, KEY);
}

export function writeRuntimeStatus(db: Db, status: RuntimeStatus): void {
  writeMeta(db, KEY, status);
}
