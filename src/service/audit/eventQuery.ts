import type { SqlDb, SqlValue } from '../sql/sqlDb.js';

/** What GET /events and the console's Events page ask of the events kept (each filter optional). */
export interface EventFilter {
  door?: string;
  /** The first holder's email_id. */
  person?: number;
  /** Part of a person's name as the event gives it, or of the name, e-mail or username of its first holder. */
  personText?: string;
  /** One type or several. */
  types?: readonly string[];
  reason?: string;
  agent?: string;
  area?: string;
  /** From this time (ms, inclusive) ... */
  from?: number;
  /** ... to this one (exclusive). */
  to?: number;
  /** Older than this event (the previous page's last). */
  before?: number;
  limit: number;
}

/** One event kept: the wire event as received, with its agent and the service's event_id. */
export interface KeptEvent {
  eventId: number;
  agentId: string;
  at: number;
  event: Record<string, unknown>;
}

/** A page of events, newest first; nextBefore: ask with before=nextBefore for older ones (null: no more). */
export interface EventPageRows {
  events: KeptEvent[];
  nextBefore: number | null;
}

/** The column of each equality filter. */
const COLUMNS = { door: 'door_uuid', person: 'person_id', reason: 'reason', agent: 'agent_id', area: 'area' } as const;

/**
 * Reads the events kept, newest first (by the event's time, then by arrival), a page at a time: each filter is a
 * condition on an indexed column, paging continues from an event (its time and id), never by an offset.
 */
export class EventQuery {
  constructor(private readonly db: SqlDb) {}

  /** null: `before` names no event kept (deleted by retention, or never one). */
  async page(filter: EventFilter): Promise<EventPageRows | null> {
    const where: string[] = [];
    const params: SqlValue[] = [];
    for (const [key, column] of Object.entries(COLUMNS) as Array<[keyof typeof COLUMNS, string]>) {
      const value = filter[key];
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      params.push(value);
    }
    if (filter.personText !== undefined) {
      const like = `%${filter.personText.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      where.push(
        `(lower(person) LIKE ? ESCAPE '\\' OR person_id IN (SELECT email_id FROM users WHERE lower(first_name || ' ' || last_name) LIKE ? ESCAPE '\\'
         OR lower(email) LIKE ? ESCAPE '\\' OR lower(username) LIKE ? ESCAPE '\\'))`,
      );
      params.push(like, like, like, like);
    }
    if (filter.types !== undefined) {
      where.push(`type ${this.db.inJsonTexts}`);
      params.push(JSON.stringify(filter.types));
    }
    if (filter.from !== undefined) {
      where.push('at >= ?');
      params.push(filter.from);
    }
    if (filter.to !== undefined) {
      where.push('at < ?');
      params.push(filter.to);
    }
    if (filter.before !== undefined) {
      const at = await this.db.value<number>('SELECT at FROM audit_events WHERE event_id = ?', [filter.before]);
      if (at === undefined) return null;
      where.push('(at < ? OR (at = ? AND event_id < ?))');
      params.push(at, at, filter.before);
    }
    const rows = await this.db.all<{ event_id: number; agent_id: string; at: number; body: string }>(
      `SELECT event_id, agent_id, at, body FROM audit_events ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY at DESC, event_id DESC LIMIT ?`,
      [...params, filter.limit + 1],
    );
    const more = rows.length > filter.limit;
    const shown = more ? rows.slice(0, filter.limit) : rows;
    return {
      events: shown.map((row) => ({ eventId: row.event_id, agentId: row.agent_id, at: row.at, event: JSON.parse(row.body) as Record<string, unknown> })),
      nextBefore: more ? shown[shown.length - 1]!.event_id : null,
    };
  }

  /** The events stored after `eventId` (by arrival), oldest first, at most `limit`: what a live page has not seen. */
  async after(eventId: number, limit: number): Promise<KeptEvent[]> {
    const rows = await this.db.all<{ event_id: number; agent_id: string; at: number; body: string }>(
      'SELECT event_id, agent_id, at, body FROM audit_events WHERE event_id > ? ORDER BY event_id LIMIT ?',
      [eventId, limit],
    );
    return rows.map((row) => ({ eventId: row.event_id, agentId: row.agent_id, at: row.at, event: JSON.parse(row.body) as Record<string, unknown> }));
  }

  /** The newest event_id stored (0: none): where a page rendered now stands. */
  async newestId(): Promise<number> {
    return (await this.db.value<number | null>('SELECT max(event_id) FROM audit_events')) ?? 0;
  }

  /** The events of one chain in seq order after `after`, at most `limit`: seq and hash (GET /audit/agents/.../hashes). */
  async hashes(agentId: string, chainId: string, after: number, limit: number): Promise<Array<{ seq: number; hash: string | null }>> {
    return this.db.all('SELECT seq, hash FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ? ORDER BY seq LIMIT ?', [
      agentId,
      chainId,
      after,
      limit,
    ]);
  }
}
