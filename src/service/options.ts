import type { SyslogOptions } from '../protocol/options.js';
import type { DatabaseOptions } from './sql/postgresConfig.js';

/** A door or computer of the organization (the service's `server.resources`). */
export interface ServiceResource {
  resourceId: number;
  /** Lower case. */
  uuid: string;
  type: 'DOOR' | 'COMPUTER';
  name: string;
}

export interface SmtpOptions {
  url: string;
  from: string;
}

/** The operator's console under /console (server.console; docs/reference-service.md, "The console"). */
export interface ConsoleOptions {
  enabled: boolean;
  /** A session ends after this many minutes without a request. */
  sessionMinutes: number;
  /** ... and this many hours after sign-in, whatever it did. */
  maxSessionHours: number;
  /**
   * The site's zone (server.timezone, an IANA name): every time the console shows, and the guest-link form's start
   * and end are read in it. Absent: the machine's zone.
   */
  timezone?: string;
}

/** The fleet (server.fleet; docs/fleet.md): enrolment, and what the service hands an adopted agent. */
export interface FleetServiceOptions {
  /** The service's identity key: Ed25519, PKCS#8 PEM (fleet/identityKey.ts reads it). */
  identityKeyFile: string;
  /** The release key's public half (SPKI PEM); absent: grants carry no release key. */
  releasePublicKeyFile?: string;
  /** How long an enrolment code is good for (1 to 720 h). */
  enrolCodeHours: number;
  /** The largest release bundle taken, in MiB (default 200). */
  maxBundleMegabytes?: number;
  /** The agents' MQTT logins in mosquitto's dynamic security plugin; absent: none is given. */
  agentMqtt?: { url: string; role: string };
}

/** Every agent's audit events kept at the service (server.audit; docs/audit.md). */
export interface AuditServiceOptions {
  /** This process's persistent broker session for events; absent: door-agent-service-events-HOST-PORT. */
  clientId?: string;
  /** Events older than this are deleted once a day; absent: kept for ever. */
  retentionDays?: number;
  /** A missing seq this long past while later ones came is a gap. */
  gapSeconds: number;
  /** The longest range of a report, in days. */
  maxReportDays: number;
}

/** Webhook deliveries (server.webhooks; docs/audit.md, "Webhooks"). */
export interface WebhookServiceOptions {
  /** CIDRs a receiver may resolve to although loopback, private, link-local, ... */
  allowAddresses: readonly string[];
  allowHttp: boolean;
  retryHours: number;
  timeoutSeconds: number;
}

/** The reference service's own settings (the `server` section). */
export interface ServerOptions {
  listen: string;
  /**
   * Where operators open the service, as their browsers see it (an origin: `https://doors.example.org`). The
   * console's mailed sign-in links are built from it and its forms must come from it; required when the console
   * mails sign-in links (with `smtp`). Absent: the console's origin is the address it listens on.
   */
  publicUrl?: string;
  /** GET /metrics on a listener of its own (HOST:PORT), apart from the API; absent: no metrics. */
  metrics?: { listen: string };
  /** The service's own files (service.db without `database`, the history mark, ...). */
  dataDir: string;
  /** PostgreSQL instead of dataDir/service.db (sql/postgresConfig.ts); absent: SQLite. */
  database?: DatabaseOptions;
  lockReplyTimeoutSeconds: number;
  resources: ServiceResource[];
  smtp?: SmtpOptions;
  /** A text file of holidays (one YYYY-MM-DD per line), read at start and published retained on P/holidays. */
  holidaysFile?: string;
  /** Slow clients and connections (httpLimits.ts); the loader fills them, a caller of startService may leave them out. */
  headersTimeoutSeconds?: number;
  requestTimeoutSeconds?: number;
  keepAliveTimeoutSeconds?: number;
  maxConnections?: number;
  /** Load shedding (loadGate.ts): the loader fills them, a caller of startService may leave them out. */
  maxDirectoryAnswers?: number;
  maxDirectoryBuilds?: number;
  retryAfterSeconds?: number;
  /** Smartcard labels that mark a PIN (default PIN): their numbers are masked to keys that may not read PINs. */
  pinLabels?: readonly string[];
  /** The console; absent or not enabled: no /console routes. */
  console?: ConsoleOptions;
  /** The site's time zone (IANA name): the console's times (ConsoleOptions.timezone). Absent: the machine's zone. */
  timezone?: string;
  /** The fleet; absent: every /fleet route answers 404. Needs publicUrl. */
  fleet?: FleetServiceOptions;
  /** The audit events kept (the loader fills it; a caller of startService may leave it out: the defaults). */
  audit?: AuditServiceOptions;
  /** The SIEM export; absent: none. */
  syslog?: SyslogOptions;
  /** Webhook deliveries (the loader fills it; absent: the defaults). */
  webhooks?: WebhookServiceOptions;
  /** Where people come from besides the API (docs/identity-sources.md); absent: the API and the console only. */
  identity?: IdentityOptions;
}

/** SCIM 2.0 under /scim/v2 (server.identity.scim; docs/identity-sources.md, "SCIM 2.0"). */
export interface ScimSourceOptions {
  enabled: boolean;
  /** A SCIM attribute path holding the person's card number; absent: cards stay at the service. */
  cardAttribute?: string | undefined;
}

/** When an LDAP entry is disabled: a flag of an integer, one of listed values (case-blind), or the attribute present. */
export interface LdapDisabledRule {
  attribute: string;
  /** Disabled when `value & mask` is not 0 (userAccountControl: 2). */
  mask?: number | undefined;
  values?: string[] | undefined;
}

/** Overrides of the preset's mapping; absent fields take the preset's (identity/ldap/presets.ts). */
export interface LdapAttributes {
  id?: string | undefined;
  email?: string | undefined;
  firstName?: string | undefined;
  lastName?: string | undefined;
  username?: string | undefined;
  disabled?: LdapDisabledRule | undefined;
  membership?: 'member' | 'memberOf' | undefined;
  groupName?: string | undefined;
  card?: string | undefined;
  pin?: string | undefined;
}

/** An LDAP server or Active Directory read on a schedule (server.identity.ldap; docs/identity-sources.md, "LDAP"). */
export interface LdapSourceOptions {
  url: string;
  startTls: boolean;
  /** The pinned CA (PEM file). */
  caFile?: string | undefined;
  serverName?: string | undefined;
  bindDn?: string | undefined;
  /** The bind password's file: read when a sync binds, never logged. */
  bindPasswordFile?: string | undefined;
  preset: 'openldap' | 'active-directory';
  users: { baseDn: string; filter?: string | undefined };
  groups?: { baseDn: string; filter?: string | undefined } | undefined;
  attributes: LdapAttributes;
  intervalMinutes: number;
  onMissing: 'suspend' | 'remove';
  maxSuspendShare: number;
  timeoutSeconds: number;
  pageSize: number;
}

/** server.identity. */
export interface IdentityOptions {
  scim?: ScimSourceOptions | undefined;
  ldap?: LdapSourceOptions | undefined;
}
