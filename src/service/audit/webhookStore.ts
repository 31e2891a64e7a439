import type { SqlDb } from '../sql/sqlDb.js';
import { waitForEventInserts } from './eventsInOrder.js';

/*
 * The webhooks' rows (docs/audit.md, "Webhooks"): the subscriptions (webhooks), what each is owed
 * (webhook_deliveries: one row per event and subscription, made before anything is sent) and each try
 * (webhook_attempts). Times are ms.
 */

export type DeliveryState = 'pending' | 'delivered' | 'failed';

export interface Webhook {
  webhookId: number;
  url: string;
  /** Event types, or ['*']. */
  types: string[];
  /** The HMAC key: for the sender only, never answered after creation nor logged. */
  secret: string;
  description: string;
  enabled: boolean;
  createdAt: number;
  createdBy: string;
}

export interface Attempt {
  attempt: number;
  at: number;
  status: number | null;
  error: string | null;
  durationMs: number;
}

export interface Delivery {
  deliveryId: number;
  webhookId: number;
  eventId: number;
  agent: string;
  type: string;
  state: DeliveryState;
  attempts: number;
  nextAt: number;
  createdAt: number;
  deliveredAt: number | null;
  pendingSince: number;
}

/** A delivery about to be sent: with its event's body as received (JSON). */
export interface DueDelivery extends Delivery {
  body: string;
}

type Num = number | string;
interface WebhookRow {
  webhook_id: Num;
  url: string;
  types: string;
  secret: string;
  description: string;
  enabled: Num;
  created_at: Num;
  created_by: string;
}
interface DeliveryRow {
  delivery_id: Num;
  webhook_id: Num;
  event_id: Num;
  agent_id: string;
  type: string;
  state: DeliveryState;
  attempts: Num;
  next_at: Num;
  created_at: Num;
  delivered_at: Num | null;
  pending_since: Num;
  body?: string;
}
interface AttemptRow {
  delivery_id: Num;
  attempt: Num;
  at: Num;
  status: Num | null;
  error: string | null;
  duration_ms: Num;
}

const WEBHOOK_COLUMNS = 'webhook_id, url, types, secret, description, enabled, created_at, created_by';
const DELIVERY_COLUMNS =
  'd.delivery_id, d.webhook_id, d.event_id, e.agent_id, e.type, d.state, d.attempts, d.next_at, d.created_at, d.delivered_at, d.pending_since';

const webhookOf = (r: WebhookRow): Webhook => ({
  webhookId: Number(r.webhook_id),
  url: r.url,
  types: JSON.parse(r.types) as string[],
  secret: r.secret,
  description: r.description,
  enabled: Number(r.enabled) === 1,
  createdAt: Number(r.created_at),
  createdBy: r.created_by,
});
const deliveryOf = (r: DeliveryRow): Delivery => ({
  deliveryId: Number(r.delivery_id),
  webhookId: Number(r.webhook_id),
  eventId: Number(r.event_id),
  agent: r.agent_id,
  type: r.type,
  state: r.state,
  attempts: Number(r.attempts),
  nextAt: Number(r.next_at),
  createdAt: Number(r.created_at),
  deliveredAt: r.delivered_at === null ? null : Number(r.delivered_at),
  pendingSince: Number(r.pending_since),
});
const attemptOf = (r: AttemptRow): Attempt => ({
  attempt: Number(r.attempt),
  at: Number(r.at),
  status: r.status === null ? null : Number(r.status),
  error: r.error,
  durationMs: Number(r.duration_ms),
});

/** Whether a subscription to `types` takes an event of `type`. */
const takesType = (types: readonly string[], type: string) => types.includes('*') || types.includes(type);

export class WebhookStore {
  constructor(private readonly db: SqlDb) {}

  async create(w: Omit<Webhook, 'webhookId'>): Promise<Webhook> {
    const id = await this.db.value<Num>(
      'INSERT INTO webhooks (url, types, secret, description, enabled, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING webhook_id',
      [w.url, JSON.stringify(w.types), w.secret, w.description, w.enabled ? 1 : 0, w.createdAt, w.createdBy],
    );
    return Object.assign({ webhookId: Number(id) }, w);
  }

  async list(): Promise<Webhook[]> {
    return (await this.db.all<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY webhook_id`)).map(webhookOf);
  }

  async get(webhookId: number): Promise<Webhook | undefined> {
    const row = await this.db.get<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE webhook_id = ?`, [webhookId]);
    return row ? webhookOf(row) : undefined;
  }

  /** Changes what `change` names; false when there is no such subscription. */
  async update(webhookId: number, change: Partial<Pick<Webhook, 'url' | 'types' | 'secret' | 'description' | 'enabled'>>): Promise<boolean> {
    const sets: string[] = [];
    const params: Array<string | number> = [];
    const set = (column: string, value: string | number) => {
      sets.push(`${column} = ?`);
      params.push(value);
    };
    if (change.url !== undefined) set('url', change.url);
    if (change.types !== undefined) set('types', JSON.stringify(change.types));
    if (change.secret !== undefined) set('secret', change.secret);
    if (change.description !== undefined) set('description', change.description);
    if (change.enabled !== undefined) set('enabled', change.enabled ? 1 : 0);
    if (sets.length === 0) return (await this.get(webhookId)) !== undefined;
    const { changes } = await this.db.run(`UPDATE webhooks SET ${sets.join(', ')} WHERE webhook_id = ?`, [...params, webhookId]);
    return changes > 0;
  }

  /** The subscription with its deliveries and their attempts; false when there is none. */
  async delete(webhookId: number): Promise<boolean> {
    return this.db.transaction(async () => {
      await this.db.run('DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT delivery_id FROM webhook_deliveries WHERE webhook_id = ?)', [webhookId]);
      await this.db.run('DELETE FROM webhook_deliveries WHERE webhook_id = ?', [webhookId]);
      return (await this.db.run('DELETE FROM webhooks WHERE webhook_id = ?', [webhookId])).changes > 0;
    });
  }

  /**
   * The next events after the webhooks' cursor (audit_exports 'webhooks'), at most `limit`, each made a pending
   * delivery for every enabled subscription that takes its type and existed when the event was received; the
   * cursor moved past them in the same transaction. How many events were read.
   */
  async fanOut(now: number, limit: number): Promise<number> {
    return this.db.transaction(async () => {
      // None passed over on PostgreSQL: before the first query (eventsInOrder.ts).
      await waitForEventInserts(this.db);
      const cursor = Number((await this.db.value<Num>("SELECT last_event_id FROM audit_exports WHERE name = 'webhooks'")) ?? 0);
      const events = await this.db.all<{ event_id: Num; type: string; received_at: Num }>(
        'SELECT event_id, type, received_at FROM audit_events WHERE event_id > ? ORDER BY event_id LIMIT ?',
        [cursor, limit],
      );
      if (events.length === 0) return 0;
      const hooks = (await this.list()).filter((w) => w.enabled);
      for (const event of events) {
        for (const hook of hooks) {
          if (!takesType(hook.types, event.type) || hook.createdAt > Number(event.received_at)) continue;
          await this.db.run(
            `INSERT INTO webhook_deliveries (webhook_id, event_id, state, attempts, next_at, created_at, pending_since)
             VALUES (?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT (webhook_id, event_id) DO NOTHING`,
            [hook.webhookId, Number(event.event_id), now, now, now],
          );
        }
      }
      const last = Number(events.at(-1)!.event_id);
      await this.db.run(
        "INSERT INTO audit_exports (name, last_event_id) VALUES ('webhooks', ?) ON CONFLICT (name) DO UPDATE SET last_event_id = excluded.last_event_id",
        [last],
      );
      return events.length;
    });
  }

  /** Pending deliveries of a subscription due at `now`, the oldest first, each with its event's body. */
  async due(webhookId: number, now: number, limit: number, except: readonly number[]): Promise<DueDelivery[]> {
    const rows = await this.db.all<DeliveryRow & { body: string }>(
      `SELECT ${DELIVERY_COLUMNS}, e.body FROM webhook_deliveries d JOIN audit_events e ON e.event_id = d.event_id
       WHERE d.webhook_id = ? AND d.state = 'pending' AND d.next_at <= ? AND d.delivery_id NOT ${this.db.inJsonIds}
       ORDER BY d.next_at, d.delivery_id LIMIT ?`,
      [webhookId, now, JSON.stringify(except), limit],
    );
    return rows.map((r) => Object.assign(deliveryOf(r), { body: r.body }));
  }

  /**
   * Takes a due delivery for this process until `until` (its next_at moved there): a process that dies while it
   * sends leaves it due again then, and another process that reads it meanwhile does not send it too. False when
   * it was not as read (taken, sent or changed since).
   */
  async claim(delivery: Delivery, until: number): Promise<boolean> {
    const { changes } = await this.db.run(
      "UPDATE webhook_deliveries SET next_at = ? WHERE delivery_id = ? AND state = 'pending' AND next_at = ? AND attempts = ?",
      [until, delivery.deliveryId, delivery.nextAt, delivery.attempts],
    );
    return changes > 0;
  }

  /**
   * One attempt's outcome, with the delivery's new state: delivered, pending again at `nextAt`, or failed. The
   * attempt is numbered after the delivery's count; nothing is written when the delivery was replayed or deleted
   * since (its attempts moved on).
   */
  async recordAttempt(delivery: Delivery, attempt: Omit<Attempt, 'attempt'>, outcome: { state: DeliveryState; nextAt: number }): Promise<void> {
    await this.db.transaction(async () => {
      const number = delivery.attempts + 1;
      const { changes } = await this.db.run(
        `UPDATE webhook_deliveries SET attempts = ?, state = ?, next_at = ?, delivered_at = ?
         WHERE delivery_id = ? AND attempts = ? AND state = 'pending'`,
        [number, outcome.state, outcome.nextAt, outcome.state === 'delivered' ? attempt.at : null, delivery.deliveryId, delivery.attempts],
      );
      if (changes === 0) return;
      await this.db.run('INSERT INTO webhook_attempts (delivery_id, attempt, at, status, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?)', [
        delivery.deliveryId,
        number,
        attempt.at,
        attempt.status,
        attempt.error,
        attempt.durationMs,
      ]);
    });
  }

  /** A subscription's deliveries, newest first: before `before` (a delivery id), in `state` if given; with their attempts. */
  async deliveries(
    webhookId: number,
    options: { before?: number; state?: DeliveryState; limit: number },
  ): Promise<Array<Delivery & { attemptLog: Attempt[] }>> {
    const inState = options.state === undefined ? '' : 'AND d.state = ?';
    const rows = await this.db.all<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN audit_events e ON e.event_id = d.event_id
       WHERE d.webhook_id = ? AND d.delivery_id < ? ${inState} ORDER BY d.delivery_id DESC LIMIT ?`,
      [webhookId, options.before ?? Number.MAX_SAFE_INTEGER, ...(options.state === undefined ? [] : [options.state]), options.limit],
    );
    const found = rows.map(deliveryOf);
    if (found.length === 0) return [];
    const attempts = await this.db.all<AttemptRow>(
      `SELECT delivery_id, attempt, at, status, error, duration_ms FROM webhook_attempts WHERE delivery_id ${this.db.inJsonIds} ORDER BY attempt`,
      [JSON.stringify(found.map((d) => d.deliveryId))],
    );
    return found.map((d) => Object.assign(d, { attemptLog: attempts.filter((a) => Number(a.delivery_id) === d.deliveryId).map(attemptOf) }));
  }

  async delivery(webhookId: number, deliveryId: number): Promise<(Delivery & { attemptLog: Attempt[] }) | undefined> {
    const [found] = await this.deliveries(webhookId, { before: deliveryId + 1, limit: 1 });
    return found?.deliveryId === deliveryId ? found : undefined;
  }

  /** A delivered or failed delivery pending again at `now` (its attempts kept); false when it is pending or absent. */
  async replay(webhookId: number, deliveryId: number, now: number): Promise<boolean> {
    const { changes } = await this.db.run(
      `UPDATE webhook_deliveries SET state = 'pending', next_at = ?, pending_since = ?, delivered_at = NULL
       WHERE webhook_id = ? AND delivery_id = ? AND state <> 'pending'`,
      [now, now, webhookId, deliveryId],
    );
    return changes > 0;
  }
}
