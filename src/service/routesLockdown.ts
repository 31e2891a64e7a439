import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { scopeName, type LockdownMessage, type LockdownScope } from '../protocol/lockdown.js';
import type { ServiceDb } from './database.js';
import { BadRequest, boolParam, parseParams } from './params.js';
import type { RouteContext } from './routeContext.js';

/** A lockdown as the service stores it (table lockdowns): the last start or end asked for, per scope. */
export interface StoredLockdown {
  scope: LockdownScope;
  active: boolean;
  by: string;
  reason: string | null;
  /** ms: when it started or ended (a repeated start or end keeps it). */
  changedAt: number;
  /** unix seconds: issued_at of the last message published about this scope. */
  issuedAt: number;
}

interface Row {
  scope: string;
  active: number;
  by: string;
  reason: string | null;
  changed_at: number;
  issued_at: number;
}

/**
 * issued_at (unix seconds) for the next message about a subject: strictly after the last one, even within the
 * same second or after the clock stepped back, so the doors take it as newer and refuse a replay of the one before.
 */
function nextIssuedAt(nowMs: number, last: number | undefined): number {
  return Math.max(Math.floor(nowMs / 1000), (last ?? 0) + 1);
}

/**
 * Issues (and persists) the next issued_at for a retained message that has no table of its own ('holidays'):
 * kept in the database so a restarted service never goes back to an older one.
 */
export function issueRetained(db: ServiceDb, subject: string, nowMs: number): number {
  return db.transaction(() => {
    const last = db.prepare('SELECT issued_at FROM retained_issued_at WHERE subject = ?').pluck().get(subject) as number | undefined;
    const at = nextIssuedAt(nowMs, last);
    db.prepare('INSERT INTO retained_issued_at (subject, issued_at) VALUES (?, ?) ON CONFLICT (subject) DO UPDATE SET issued_at = excluded.issued_at').run(
      subject,
      at,
    );
    return at;
  })();
}

function scopeOf(name: string): LockdownScope {
  const separator = name.indexOf(':');
  const kind = name.slice(0, separator);
  const id = name.slice(separator + 1);
  return kind === 'door' ? { kind: 'door', uuid: id } : { kind: 'agent', id };
}

function fromRow(row: Row): StoredLockdown {
  return { scope: scopeOf(row.scope), active: row.active === 1, by: row.by, reason: row.reason, changedAt: row.changed_at, issuedAt: row.issued_at };
}

/** The message published retained for a stored lockdown (protocol/lockdown.ts). */
export function lockdownMessage(lockdown: StoredLockdown): LockdownMessage {
  return { lockdown: lockdown.active, by: lockdown.by, ...(lockdown.reason !== null ? { reason: lockdown.reason } : {}) };
}

/** The lockdowns table: each change and each publication gets its issued_at here, in the same transaction. */
export class LockdownStore {
  constructor(private readonly db: ServiceDb) {}

  all(): StoredLockdown[] {
    return (this.db.prepare('SELECT scope, active, "by" AS by, reason, changed_at, issued_at FROM lockdowns ORDER BY scope').all() as Row[]).map(fromRow);
  }

  get(scope: LockdownScope): StoredLockdown | undefined {
    const row = this.db.prepare('SELECT scope, active, "by" AS by, reason, changed_at, issued_at FROM lockdowns WHERE scope = ?').get(scopeName(scope)) as
      | Row
      | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** Records a start or an end; returns the state before it and the stored one (with its message's issued_at). */
  set(
    scope: LockdownScope,
    change: { active: boolean; by: string; reason: string | null },
    nowMs: number,
  ): { previous: StoredLockdown | undefined; stored: StoredLockdown } {
    return this.db.transaction(() => {
      const previous = this.get(scope);
      const stored: StoredLockdown = {
        scope,
        ...change,
        changedAt: previous !== undefined && previous.active === change.active ? previous.changedAt : nowMs,
        issuedAt: nextIssuedAt(nowMs, previous?.issuedAt),
      };
      this.db
        .prepare(
          `INSERT INTO lockdowns (scope, active, "by", reason, changed_at, issued_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (scope) DO UPDATE SET active = excluded.active, "by" = excluded."by", reason = excluded.reason,
             changed_at = excluded.changed_at, issued_at = excluded.issued_at`,
        )
        .run(scopeName(scope), stored.active ? 1 : 0, stored.by, stored.reason, stored.changedAt, stored.issuedAt);
      return { previous, stored };
    })();
  }

  /** Every stored lockdown with a new issued_at each, persisted: what a (re)connect publishes again. */
  reissueAll(nowMs: number): StoredLockdown[] {
    return this.db.transaction(() => {
      const update = this.db.prepare('UPDATE lockdowns SET issued_at = ? WHERE scope = ?');
      return this.all().map((lockdown) => {
        const issuedAt = nextIssuedAt(nowMs, lockdown.issuedAt);
        update.run(issuedAt, scopeName(lockdown.scope));
        return { ...lockdown, issuedAt };
      });
    })();
  }
}

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Extension endpoints (issue 14; not in the API document): POST /lockdown starts or ends the lockdown of one door
 * or of every door of an agent, stored and published retained on P/doors/<uuid>/lockdown or P/agents/<id>/lockdown;
 * GET /lockdown lists what is stored. ADMIN only, reading included: who locked what down, and why, is not for
 * every key holder.
 */
export function registerLockdownRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const store = new LockdownStore(ctx.db);

  app.post('/lockdown', async (request: FastifyRequest, reply: FastifyReply) => {
    ctx.requireRank(request, 'ADMIN');
    const p = parseParams(
      z.object({
        active: boolParam,
        uuid: z.string().min(1).max(100).optional(),
        agent_id: z.string().regex(AGENT_ID, 'an agent id: 1 to 64 letters, digits, _ or -').optional(),
        reason: z.string().max(256, 'at most 256 characters').optional(),
        by: z.string().trim().min(1, 'name who sets it (or leave it out)').max(128, 'at most 128 characters').optional(),
      }),
      request.query,
      request.body,
    );
    if ((p.uuid === undefined) === (p.agent_id === undefined)) {
      throw new BadRequest("uuid, agent_id: give exactly one of them: a door's uuid (that door) or an agent's id (every door it controls)");
    }
    let scope: LockdownScope;
    let label: string;
    if (p.uuid !== undefined) {
      const door = ctx.resources.find((r) => r.uuid === p.uuid!.toLowerCase());
      if (!door) throw new BadRequest(`no resource with uuid ${p.uuid}`, 404);
      if (door.type !== 'DOOR') throw new BadRequest(`uuid: ${door.name} is a ${door.type}, not a door`);
      scope = { kind: 'door', uuid: door.uuid };
      label = door.name;
    } else {
      scope = { kind: 'agent', id: p.agent_id! };
      label = `agent ${p.agent_id}`;
    }
    // Checked before anything is stored: a lockdown recorded here but unable to reach any door would read as
    // applied in GET /lockdown.
    if (!ctx.doors) {
      return reply.code(503).send({ error: 'no MQTT broker is configured for the service (mqtt section): a lockdown cannot reach the doors' });
    }
    const reason = p.reason === undefined || p.reason.trim() === '' ? null : p.reason;
    const { previous, stored } = store.set(scope, { active: p.active, by: p.by ?? `API key (${request.rank})`, reason }, ctx.clock.wallNow());
    // An end is published even when nothing was active here: it also clears a lockdown set on the broker directly.
    const sent = ctx.doors.publishLockdown(stored.scope, lockdownMessage(stored), stored.issuedAt);
    ctx.logger.info(
      { scope: scopeName(scope), active: stored.active, by: stored.by, reason: stored.reason, sent },
      stored.active ? 'lockdown started' : 'lockdown ended',
    );
    const wasActive = previous?.active === true;
    const success = stored.active
      ? wasActive
        ? `${label} was already in lockdown`
        : `lockdown started for ${label}`
      : wasActive
        ? `lockdown ended for ${label}`
        : `${label} was not in lockdown`;
    return sent ? { success } : { success, warning: 'the MQTT broker is not reachable now: the doors get this when the service reconnects to it' };
  });

  app.get('/lockdown', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    return {
      lockdowns: store.all().map((l) => ({
        scope: scopeName(l.scope),
        active: l.active,
        by: l.by,
        reason: l.reason,
        changed_at: new Date(l.changedAt).toISOString(),
      })),
    };
  });
}
