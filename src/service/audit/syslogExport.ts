import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { SyslogOptions } from '../../protocol/options.js';
import type { AuditWireEvent } from '../../protocol/syslog.js';
import { SyslogSender, type SyslogRow, type SyslogSource } from '../../protocol/syslogSender.js';
import type { Clock, Timers } from '../../util/clock.js';
import type { Leadership } from '../sql/leadership.js';
import type { SqlDb } from '../sql/sqlDb.js';
import { waitForEventInserts } from './eventsInOrder.js';

/** The export's row in audit_exports. */
const EXPORT_NAME = 'syslog';

/**
 * The service's events as the syslog sender reads them: audit_events in event_id order after the cursor kept in
 * audit_exports ('syslog'), none passed over (eventsInOrder.ts).
 */
class AuditEventsSyslogSource implements SyslogSource {
  constructor(private readonly db: SqlDb) {}

  async confirmedCursor(): Promise<number> {
    return Number((await this.db.value<number | string>('SELECT last_event_id FROM audit_exports WHERE name = ?', [EXPORT_NAME])) ?? 0);
  }

  async after(cursor: number, limit: number): Promise<SyslogRow[]> {
    const read = () =>
      this.db.all<{ event_id: number | string; agent_id: string; body: string }>(
        'SELECT event_id, agent_id, body FROM audit_events WHERE event_id > ? ORDER BY event_id LIMIT ?',
        [cursor, limit],
      );
    const rows = await this.db.transaction(async () => {
      await waitForEventInserts(this.db);
      return read();
    });
    return rows.map((row) => ({ cursor: Number(row.event_id), agent: row.agent_id, event: JSON.parse(row.body) as AuditWireEvent }));
  }

  async confirmed(cursor: number): Promise<void> {
    await this.db.run('INSERT INTO audit_exports (name, last_event_id) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET last_event_id = excluded.last_event_id', [
      EXPORT_NAME,
      cursor,
    ]);
  }
}

/**
 * `server.syslog` (docs/audit.md, "SIEM export: syslog"): the process holding the publisher lock sends every event
 * the service keeps; another process takes over, from the same cursor, when it gets the lock.
 */
export class SyslogExport {
  private readonly sender: SyslogSender;
  /** Starts and stops one after the other: a lock lost and taken back never runs two senders. */
  private changes: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly deps: { db: SqlDb; leadership: Leadership; syslog: SyslogOptions; clock: Clock; timers: Timers; logger: Logger }) {
    this.sender = new SyslogSender({
      syslog: deps.syslog,
      defaultHostname: hostname(),
      source: new AuditEventsSyslogSource(deps.db),
      clock: deps.clock,
      timers: deps.timers,
      logger: deps.logger,
    });
  }

  start(): void {
    const { leadership } = this.deps;
    leadership.onChange((leading) => this.follow(leading));
    this.follow(leadership.leading);
  }

  private follow(leading: boolean): void {
    this.changes = this.changes.then(async () => {
      if (leading && !this.closed) this.sender.start();
      else await this.sender.stop();
    });
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.follow(false);
    await this.changes;
  }
}
