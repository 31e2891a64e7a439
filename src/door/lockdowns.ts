import type { Logger } from 'pino';
import type { HeldIssuedAt, Ordered } from '../protocol/issuedAt.js';
import type { NewEvent } from '../store/eventLog.js';
import { NO_LOCKDOWN, type LockdownRecord } from '../store/operationsState.js';
import { withProps } from '../core/objects.js';

export type LockdownScopeKey = 'agent' | `door:${string}`;

export interface LockdownRequest {
  active: boolean;
  by: string;
  reason?: string | null;
  /** issued_at (unix s) of a signed message; null when unsigned. */
  issuedAt: number | null;
  /**
   * Orders issued_at against the one held, a time from the future clamped (protocol/issuedAt.ts); absent:
   * compared as given.
   */
  order?: (held: HeldIssuedAt) => Ordered;
}

export type LockdownOutcome = 'started' | 'ended' | 'unchanged' | 'stale';

export type EffectiveLockdown = LockdownRecord & { scope: 'door' | 'agent' | null };

/** A door's lockdown as people see it, from its own record and the agent's: its own, else the agent's. */
export function effectiveLockdown(own: LockdownRecord, agent: LockdownRecord): EffectiveLockdown {
  if (own.active) return withProps(own, { scope: 'door' });
  return agent.active ? withProps(agent, { scope: 'agent' }) : withProps(NO_LOCKDOWN, { scope: null });
}

export interface LockdownsDeps {
  doorUuids: readonly string[];
  load: (scope: LockdownScopeKey) => LockdownRecord | undefined;
  /** Makes the record durable (the daemon's write queue: a busy database delays it, never loses it). */
  save: (scope: LockdownScopeKey, record: LockdownRecord) => void;
  record: (event: NewEvent) => void;
  wallNow: () => number;
  logger: Logger;
}

/**
 * The lockdowns in force: the agent's (every door) and each door's own. A door is in lockdown when either is.
 * Changes come from retained MQTT messages; a signed message older than the one in force is refused, so a
 * replayed old "end" cannot lift a lockdown. Kept across restarts. Listeners hear of the doors whose lockdown
 * changed, after the change is recorded: they lock the door, pause its schedule and publish its state.
 */
export class Lockdowns {
  private readonly records = new Map<LockdownScopeKey, LockdownRecord>();
  /** Each door's scope key, made once: asked at every tap, a key built per call would be a new string to hash. */
  private readonly doorScopes = new Map<string, LockdownScopeKey>();
  private readonly listeners: Array<(doorUuid: string, lockedDown: boolean) => void> = [];

  constructor(private readonly deps: LockdownsDeps) {
    for (const uuid of deps.doorUuids) this.doorScopes.set(uuid, `door:${uuid}`);
    const scopes: LockdownScopeKey[] = ['agent', ...this.doorScopes.values()];
    for (const scope of scopes) {
      let record: LockdownRecord | undefined;
      try {
        record = deps.load(scope);
      } catch (err) {
        // Not knowing would mean opening doors that were locked down: fail closed, say so, carry on.
        deps.logger.error({ err, scope }, 'cannot read the saved lockdown state: the doors are held in lockdown until it is set again');
        record = withProps(NO_LOCKDOWN, { active: true, by: 'door-agent', reason: 'saved lockdown state unreadable' });
      }
      this.records.set(scope, record ?? NO_LOCKDOWN);
    }
  }

  onChange(listener: (doorUuid: string, lockedDown: boolean) => void): void {
    this.listeners.push(listener);
  }

  isLockedDown(doorUuid: string): boolean {
    return this.get('agent').active || this.get(this.doorScopes.get(doorUuid) ?? `door:${doorUuid}`).active;
  }

  get(scope: LockdownScopeKey): LockdownRecord {
    return this.records.get(scope) ?? NO_LOCKDOWN;
  }

  /** The lockdown of a door as people see it: its own, else the agent's. */
  effective(doorUuid: string): EffectiveLockdown {
    return effectiveLockdown(this.get(`door:${doorUuid}`), this.get('agent'));
  }

  /**
   * Forgets the issued_at held per scope, keeping each lockdown as it is (the switch to signed mode: an
   * issued_at an unsigned message set must not make signed ones look stale). Returns the scopes changed.
   */
  forgetIssuedAt(): LockdownScopeKey[] {
    const changed: LockdownScopeKey[] = [];
    for (const [scope, record] of this.records) {
      if (record.issuedAt === null && (record.futureIssuedAt ?? null) === null) continue;
      const { futureIssuedAt: _dropped, ...rest } = record;
      const next = withProps(rest, { issuedAt: null });
      this.records.set(scope, next);
      this.deps.save(scope, next);
      changed.push(scope);
    }
    return changed;
  }

  apply(scope: LockdownScopeKey, request: LockdownRequest): LockdownOutcome {
    if (!this.records.has(scope)) return 'unchanged'; // not one of this agent's doors
    const current = this.get(scope);
    let issuedAt = request.issuedAt ?? current.issuedAt;
    let futureIssuedAt = current.futureIssuedAt ?? null;
    if (request.issuedAt !== null && request.order) {
      const ordered = request.order({ issuedAt: current.issuedAt, future: futureIssuedAt });
      if (ordered.order === 'same') return 'unchanged'; // the retained message again (a reconnect)
      if (ordered.order === 'stale') return 'stale';
      ({ issuedAt, future: futureIssuedAt } = ordered.next);
    } else if (request.issuedAt !== null && current.issuedAt !== null) {
      if (request.issuedAt === current.issuedAt) return 'unchanged'; // the retained message again (a reconnect)
      if (request.issuedAt < current.issuedAt) return 'stale';
    }
    const affected = scope === 'agent' ? this.deps.doorUuids : [scope.slice('door:'.length)];
    const before = new Map(affected.map((uuid) => [uuid, this.isLockedDown(uuid)]));
    const changed = current.active !== request.active;
    const next: LockdownRecord = {
      active: request.active,
      by: request.by,
      reason: request.reason ?? null,
      since: changed ? this.deps.wallNow() : current.since,
      issuedAt,
      ...(futureIssuedAt !== null ? { futureIssuedAt } : {}),
    };
    this.records.set(scope, next);
    try {
      this.deps.save(scope, next);
    } catch (err) {
      this.deps.logger.error({ err, scope }, 'cannot save the lockdown state (it is in force now, but may not survive a restart)');
    }
    if (!changed) return 'unchanged';
    const at = this.deps.wallNow();
    for (const uuid of affected) {
      this.deps.record({
        type: request.active ? 'lockdown_started' : 'lockdown_ended',
        door: uuid,
        at,
        data: { scope: scope === 'agent' ? 'agent' : 'door', by: request.by, reason: next.reason, in_lockdown: this.isLockedDown(uuid) },
      });
    }
    this.deps.logger.warn({ scope, by: request.by, reason: next.reason }, request.active ? 'lockdown started' : 'lockdown ended');
    for (const uuid of affected) {
      const now = this.isLockedDown(uuid);
      if (now === before.get(uuid)) continue;
      for (const listener of this.listeners) {
        try {
          listener(uuid, now);
        } catch (err) {
          this.deps.logger.error({ err, door: uuid }, 'a lockdown listener failed');
        }
      }
    }
    return request.active ? 'started' : 'ended';
  }
}
