import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { acrossKeys, EVEN_WITH_PROBLEMS } from './acrossKeys.js';
import { auditServerSchema, syslogSchema, webhooksServerSchema } from './auditSchema.js';
import { seconds } from './doorSchema.js';
import { fleetServerSchema } from './fleetSchema.js';
import { identityServerSchema } from './identitySchema.js';
import { missingPublicUrl, publicUrlSchema } from './publicUrl.js';
import { isValidTimeZone } from './timeZone.js';

/*
 * The reference service's section of a configuration file (`server`), with its checks across keys, and the
 * listener addresses it shares with the agent's metrics (config/schema.ts puts both files together).
 */
/** A listener's HOST:PORT (`127.0.0.1:8080`, `[::1]:9464`); port 0 lets the system choose. */
const listenAddress = (example: string) =>
  z
    .string()
    .regex(/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/, `expected HOST:PORT, e.g. ${example}`)
    // Only on a HOST:PORT: a malformed value gets the one message above.
    .refine((listen) => !/:\d+$/.test(listen) || Number(listen.slice(listen.lastIndexOf(':') + 1)) <= 65_535, 'the port must be 0-65535');

/** Prometheus metrics on a listener of their own (docs/operations.md, "Metrics"); loopback unless said otherwise. */
export const metricsSchema = (defaultListen: string) => z.strictObject({ listen: listenAddress(defaultListen).default(defaultListen) });

/** The reference service's own section (`door-agent service`); it shares the file and the mqtt section. */
const serverFields = z.strictObject({
  listen: listenAddress('127.0.0.1:8080').default('127.0.0.1:8080'),
  /** Where operators open the service (https://doors.example.org): the console's mailed links and its origin (publicUrl.ts). */
  publicUrl: publicUrlSchema.optional(),
  /** GET /metrics on its own listener, apart from the API (docs/reference-service.md, "Metrics"). */
  metrics: metricsSchema('127.0.0.1:9465').optional(),
  dataDir: z.string().min(1).default('/var/lib/door-agent-service'),
  /** PostgreSQL instead of SQLite's dataDir/service.db (several service processes; sql/postgresConfig.ts). */
  database: z
    .strictObject({
      url: z.string().regex(/^postgres(ql)?:\/\//, 'must be postgres://USER@HOST:PORT/DATABASE (the password goes in passwordFile)'),
      passwordFile: z.string().min(1).optional(),
      caFile: z.string().min(1).optional(),
      maxConnections: wholeNumber().min(2).max(500).default(10),
    })
    .optional(),
  lockReplyTimeoutSeconds: seconds(1, 120).default(5),
  /** The site's time zone, as agent.timezone: the console shows its times in it and reads a guest link's start and end in it. */
  timezone: z
    .string()
    .refine(isValidTimeZone, 'not an IANA time zone (e.g. Europe/Berlin)')
    .default(() => new Intl.DateTimeFormat().resolvedOptions().timeZone),
  resources: z
    .array(
      z.strictObject({
        resourceId: wholeNumber().min(0),
        uuid: z.uuid({ error: 'must be the resource UUID' }),
        type: z.enum(['DOOR', 'COMPUTER']),
        name: z.string().min(1).max(100),
      }),
    )
    .default([]),
  smtp: z.strictObject({ url: z.url({ protocol: /^smtps?$/ }), from: z.string().min(3) }).optional(),
  /** Holidays for every door: one date YYYY-MM-DD per line (# comments), read at start, published on P/holidays. */
  holidaysFile: z.string().min(1).optional(),
  // Slow clients (issue 32 item 7): the defaults are DEFAULT_HTTP_LIMITS of service/httpLimits.ts.
  headersTimeoutSeconds: seconds(1, 600).default(30),
  requestTimeoutSeconds: seconds(1, 600).default(60),
  keepAliveTimeoutSeconds: seconds(1, 600).default(10),
  maxConnections: wholeNumber().min(16).max(100_000).default(1000),
  // Load shedding (issue 28 item 2): the defaults are DEFAULT_LOAD_LIMITS of service/loadGate.ts.
  maxDirectoryAnswers: wholeNumber().min(1).max(100_000).default(200),
  maxDirectoryBuilds: wholeNumber().min(1).max(64).default(4),
  retryAfterSeconds: seconds(1, 3600).default(5),
  /** Smartcard labels that mark a PIN, as the agent's access.pinLabels: masked to keys that may not read PINs. */
  pinLabels: z.array(z.string().trim().min(1)).min(1).default(['PIN']),
  /** The fleet (docs/fleet.md): agents enrol with a code and are adopted by an operator; off without it. */
  fleet: fleetServerSchema.optional(),
  /** Every agent's audit events kept at the service (docs/audit.md); the defaults apply without the section. */
  audit: auditServerSchema.prefault({}),
  /** Every audit event the service keeps, sent to a SIEM as syslog (docs/audit.md, "SIEM export"); off without it. */
  syslog: syslogSchema.optional(),
  /** Webhook deliveries (docs/audit.md, "Webhooks"): what a receiver's address may be, retries. */
  webhooks: webhooksServerSchema.prefault({}),
  /** Where the service takes its people from: SCIM 2.0, LDAP or Active Directory (docs/identity-sources.md). */
  identity: identityServerSchema.optional(),
  /** The operator's console under /console (docs/reference-service.md, "The console"); off unless enabled. */
  console: z
    .strictObject({
      enabled: z.boolean().default(false),
      sessionMinutes: wholeNumber().min(1).max(1440).default(30),
      maxSessionHours: wholeNumber().min(1).max(168).default(12),
    })
    .optional(),
});
export const serverSchema = serverFields
  // The checks across keys, also on a section with other problems (config/acrossKeys.ts), as the agent's file.
  .superRefine(acrossKeys([refineHttpTimeouts, refinePublicUrl, refineConsoleSessions, refineResources]), EVEN_WITH_PROBLEMS);

type ServerSection = z.output<typeof serverFields>;

function refineHttpTimeouts(server: ServerSection, ctx: z.RefinementCtx): void {
  if (server.headersTimeoutSeconds > server.requestTimeoutSeconds) {
    ctx.addIssue({
      code: 'custom',
      path: ['headersTimeoutSeconds'],
      message: `must not be longer than requestTimeoutSeconds (${server.requestTimeoutSeconds})`,
    });
  }
}

function refinePublicUrl(server: ServerSection, ctx: z.RefinementCtx): void {
  const noPublicUrl = missingPublicUrl(server);
  if (noPublicUrl !== null) ctx.addIssue({ code: 'custom', path: ['publicUrl'], message: noPublicUrl });
}

function refineConsoleSessions(server: ServerSection, ctx: z.RefinementCtx): void {
  if (server.console && server.console.sessionMinutes > server.console.maxSessionHours * 60) {
    ctx.addIssue({
      code: 'custom',
      path: ['console', 'sessionMinutes'],
      message: `must not be longer than maxSessionHours (${server.console.maxSessionHours} h = ${server.console.maxSessionHours * 60} min)`,
    });
  }
}

/** Each resource's id and uuid once (a uuid in any case). */
function refineResources(server: ServerSection, ctx: z.RefinementCtx): void {
  const ids = new Map<number, number>();
  const uuids = new Map<string, number>();
  server.resources.forEach((r, i) => {
    const id = ids.get(r.resourceId);
    if (id !== undefined) ctx.addIssue({ code: 'custom', path: ['resources', i, 'resourceId'], message: `same resourceId as resources[${id}]` });
    else ids.set(r.resourceId, i);
    const u = uuids.get(r.uuid.toLowerCase());
    if (u !== undefined) ctx.addIssue({ code: 'custom', path: ['resources', i, 'uuid'], message: `same uuid as resources[${u}]` });
    else uuids.set(r.uuid.toLowerCase(), i);
  });
}
