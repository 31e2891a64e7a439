import type { AuditWireEvent } from '../protocol/syslog.js';
import type { SyslogRow, SyslogSource } from '../protocol/syslogSender.js';
import type { Db } from './database.js';
import type { EventLog } from './eventLog.js';
import { readMeta, writeMeta } from './meta.js';
import type { PendingWrites } from './pendingWrites.js';

/** state.db's meta key: the last seq the syslog receiver is sure to have. */
const CURSOR_KEY = 'syslog_confirmed_seq';

/**
 * How far the agent's syslog export is sure of (docs/audit.md, "SIEM export: syslog"), kept in state.db: eviction
 * keeps every event after it (`keepFrom`), so an event the receiver has not had is never lost to `agent.maxEvents`.
 */
export class SyslogCursor {
  private confirmedSeq: number;

  constructor(
    private readonly db: Db,
    private readonly writes: PendingWrites,
  ) {
    this.confirmedSeq = readMeta<number>(db, CURSOR_KEY) ?? 0;
  }

  get confirmed(): number {
    return this.confirmedSeq;
  }

  /** The first seq not yet confirmed: eviction keeps it and every later one. */
  nextUnsent(): number {
    return this.confirmedSeq + 1;
  }

  /** Saved through the pending writes (a busy database delays it; lost to a crash, the events are sent again). */
  confirm(seq: number): void {
    if (seq <= this.confirmedSeq) return;
    this.confirmedSeq = seq;
    this.writes.run('syslog-cursor', () => writeMeta(this.db, CURSOR_KEY, seq));
  }
}

/** The agent's audit log as the syslog sender reads it: the events after the cursor, in seq order. */
export class AuditLogSyslogSource implements SyslogSource {
  constructor(private readonly deps: { events: () => EventLog; cursor: () => SyslogCursor; agentId: string }) {}

  async confirmedCursor(): Promise<number> {
    return this.deps.cursor().confirmed;
  }

  async after(cursor: number, limit: number): Promise<SyslogRow[]> {
    const log = this.deps.events();
    const durable = log.durableThrough();
    return log
      .since(cursor, limit)
      .filter((event) => event.seq <= durable)
      .map((event) => ({ cursor: event.seq, agent: this.deps.agentId, event: event as AuditWireEvent }));
  }

  async confirmed(cursor: number): Promise<void> {
    this.deps.cursor().confirm(cursor);
  }
}
