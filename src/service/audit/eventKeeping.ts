import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { ownedClientIdFor } from '../../protocol/connection.js';
import type { MqttOptions } from '../../protocol/options.js';
import type { Clock, Timers } from '../../util/clock.js';
import type { Env } from '../../util/secretFiles.js';
import type { AuditServiceOptions } from '../options.js';
import type { Leadership } from '../sql/leadership.js';
import type { SqlDb } from '../sql/sqlDb.js';
import { DEFAULT_GAP_SECONDS, GapWatch } from './chainGaps.js';
import { defaultEventsClientId, EventIngest } from './eventIngest.js';
import { AuditEventStore } from './eventStore.js';
import { GapRequests } from './gapRequests.js';
import { Retention } from './retention.js';
import { StoredEvents } from './storedEvents.js';

/**
 * The service's keeping of every agent's audit events (docs/audit.md, "Where events are kept"), as the composition
 * root starts it: the ingest on its own broker session (with an mqtt section), the gap watch and its requests to
 * the agents (with an mqtt section, in the leading process), and the retention (with server.audit.retentionDays,
 * in the leading process).
 */
export class EventKeeping {
  /** What this process's ingest takes, for the console's live Events page. */
  readonly storedEvents = new StoredEvents();
  private ingest: EventIngest | null = null;
  private readonly gapWatch: GapWatch;
  private readonly retention: Retention | null;
  private readonly store: AuditEventStore;

  constructor(
    private readonly deps: {
      db: SqlDb;
      leadership: Leadership;
      mqtt: MqttOptions | undefined;
      env: Env;
      audit: AuditServiceOptions | undefined;
      clock: Clock;
      timers: Timers;
      logger: Logger;
    },
  ) {
    this.store = new AuditEventStore(deps.db);
    const gapSeconds = deps.audit?.gapSeconds ?? DEFAULT_GAP_SECONDS;
    this.gapWatch = new GapWatch({
      db: deps.db,
      gapSeconds,
      clock: deps.clock,
      timers: deps.timers,
      logger: deps.logger,
      // With a broker: the agents are asked for the events of their gaps, on the ingest's session.
      ...(deps.mqtt
        ? {
            requests: new GapRequests({
              db: deps.db,
              gapSeconds,
              leadership: deps.leadership,
              send: (agentId, request) => this.ingest?.requestResend(agentId, request) ?? Promise.resolve(false),
              clock: deps.clock,
              logger: deps.logger,
            }),
          }
        : {}),
    });
    const retentionDays = deps.audit?.retentionDays;
    this.retention =
      retentionDays === undefined
        ? null
        : new Retention({
            db: deps.db,
            store: this.store,
            retentionDays,
            leadership: deps.leadership,
            clock: deps.clock,
            timers: deps.timers,
            logger: deps.logger,
          });
  }

  /** Starts, once the service listens on `port` (the default client id names it: one session per process). */
  start(port: number): void {
    const { mqtt } = this.deps;
    if (mqtt) {
      // The default id is owned (protocol/connection.ts): another broker user cannot guess it and take the session over.
      const clientId = this.deps.audit?.clientId ?? ownedClientIdFor(mqtt, this.deps.env, defaultEventsClientId(hostname(), port));
      this.ingest = new EventIngest(mqtt, this.deps.env, {
        clientId,
        store: this.store,
        stored: this.storedEvents,
        clock: this.deps.clock,
        logger: this.deps.logger,
      });
    }
    this.gapWatch.start();
    this.retention?.start();
  }

  /** The ingest's counts (null without an mqtt section). */
  get counts(): EventIngest['counts'] | null {
    return this.ingest?.counts ?? null;
  }

  async close(): Promise<void> {
    this.retention?.close();
    this.gapWatch.close();
    await this.ingest?.close();
  }
}
