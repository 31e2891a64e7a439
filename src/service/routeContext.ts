import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import type { Rank } from './apiKeys.js';
import type { Directory } from './directory.js';
import type { DirectoryBytes, DirectoryVariant } from './directoryBytes.js';
import type { ServiceMqtt } from './doorsMqtt.js';
import type { FleetDeps } from './fleet/fleetDeps.js';
import type { HttpLimits } from './httpLimits.js';
import type { LevelStore } from './levels.js';
import type { LdapSyncControl } from './identity/ldap/ldapSyncControl.js';
import type { Gate, LoadLimits } from './loadGate.js';
import type { Mailer } from './mailer.js';
import type { AuditServiceOptions, ConsoleOptions, IdentityOptions, ServiceResource, WebhookServiceOptions } from './options.js';
import type { SiteFeed } from './console/siteFeed.js';
import type { PinMasking } from './pinMasking.js';
import type { PublishKind, PublishQueue } from './publishQueue.js';
import type { Refusals } from './refusals.js';
import type { ChangeFeed } from './sql/changeFeed.js';
import type { Leadership } from './sql/leadership.js';
import type { SqlDb } from './sql/sqlDb.js';
import type { ServiceMetrics } from './serviceMetrics.js';
import type { StoredEvents } from './audit/storedEvents.js';
import type { UserStore } from './users.js';

/*
 * What the routes (routes*.ts) are given: the stores, the doors' publisher and the checks of a request's key.
 * server.ts builds one RouteContext and hands it to every register*Routes; a route module imports this module,
 * never server.ts nor another route module (docs/architecture.md, "Layers").
 */

/** What buildService (server.ts) is given by the composition root (root.ts). */
export interface ServiceDeps {
  /** The service's database, SQLite or PostgreSQL (sql/sqlDb.ts): every store goes through it. */
  db: SqlDb;
  /** The directory history's mark file (directoryHistory.ts): beside a SQLite file, in server.dataDir on PostgreSQL. */
  historyMarkFile?: string | null;
  clock: Clock;
  logger: Logger;
  /** Doors and computers of the organization (config server.resources). */
  resources: ServiceResource[];
  /** Lock commands to the doors; absent without an mqtt section. */
  doors?: ServiceMqtt;
  /** What the doors are owed (the publisher sends it); absent without an mqtt section. */
  publishQueue?: PublishQueue;
  /** News of changes between the service processes on the database (sql/changeFeed.ts); absent: this process only. */
  changeFeed?: ChangeFeed;
  lockReplyTimeoutMs: number;
  mailer?: Mailer;
  /** The smartcard labels that mark a PIN (server.pinLabels; default PIN): masked to keys that may not read PINs. */
  pinLabels?: readonly string[];
  /** Timeouts and the connection limit (server.*TimeoutSeconds, server.maxConnections); defaults when absent. */
  http?: Partial<HttpLimits>;
  /** Bounds on directory work and the Retry-After of a refusal (server.maxDirectoryAnswers, ...); defaults when absent. */
  loadLimits?: Partial<LoadLimits>;
  /** Called as each GET /directory answer starts being built (tests count the builds; a promise returned holds it). */
  onDirectoryBuild?: (variant: DirectoryVariant) => void | Promise<void>;
  /** Counts and times the requests, reads the directory revision (with server.metrics). */
  metrics?: ServiceMetrics;
  /**
   * GET /healthz's check: resolves when this process can run a trivial query on its database, rejects otherwise;
   * databaseReachable(db) (databaseProbe.ts) when absent.
   */
  databaseProbe?: () => Promise<void>;
  /** The fleet (server.fleet: docs/fleet.md): its keys, the agents' broker logins; absent: every /fleet route answers 404. */
  fleet?: FleetDeps;
  /** The site's zone (server.timezone, an IANA name): the reports' days and times; absent: the machine's zone. */
  timezone?: string;
  /** The audit events kept (server.audit; docs/audit.md); absent: its defaults. */
  audit?: AuditServiceOptions;
  /** Webhook subscriptions' bounds (server.webhooks; docs/audit.md, "Webhooks"); absent: its defaults. */
  webhooks?: WebhookServiceOptions;
  /** Where people come from besides the API (server.identity; docs/identity-sources.md); absent: the API only. */
  identity?: IdentityOptions;
  /** Which process runs the jobs done once for all (the scheduled LDAP sync); absent: this process alone (SoleLeader). */
  leadership?: Leadership;
  /** The LDAP sync the routes run (a test's own); absent: server.ts makes one when identity.ldap is set. */
  ldapSync?: LdapSyncControl;
  /** The audit events this process's ingest takes, as they are committed (audit/storedEvents.ts): the live Events page. */
  storedEvents?: StoredEvents;
  /** The console (server.console, enabled), with the live site it shows (null without an mqtt section). */
  console?: {
    options: ConsoleOptions;
    feed: SiteFeed | null;
    mailConfigured: boolean;
    /** server.publicUrl: the console's origin and its mailed links (required with mailConfigured). */
    publicUrl?: string;
    /** server.listen as configured (its host name, when it is one, is an origin of the console too). */
    listen?: string;
  };
}

/** The service's load: the bounds in force, what is in flight, and the requests refused. */
export interface ServiceLoad {
  limits: LoadLimits;
  /** Full GET /directory answers being sent. */
  answers: Gate;
  /** Directory answers being built or compressed. */
  builds: Gate;
  refusals: Refusals;
}

export interface RouteContext extends ServiceDeps {
  users: UserStore;
  levels: LevelStore;
  directory: Directory;
  /** GET /directory's answers as stored bytes, one build per revision. */
  directoryBytes: DirectoryBytes;
  load: ServiceLoad;
  /** The LDAP sync (server.identity.ldap); absent without it: POST /identity-sources/ldap/sync answers 404. */
  ldapSync?: LdapSyncControl;
  /** Refuses the request (403) unless the key's rank is at least `rank` (a DOOR key has none). */
  requireRank(request: FastifyRequest, rank: Rank): void;
  /** The masking of PINs for this request's key; null when it reads them in clear (ADMIN, SUPER, DOOR). */
  pinMaskFor(request: FastifyRequest): PinMasking | null;
  /**
   * Owes the doors a message (publishQueue.ts): written in the caller's transaction, sent by the publisher once it
   * is committed. Nothing without an mqtt section.
   */
  owe(kind: PublishKind, subject?: string): Promise<void>;
  /** New mail is in the outbox. */
  mailQueued(): void;
}
