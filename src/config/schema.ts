import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { doorSchema, seconds } from './doorSchema.js';
import { refineDoors } from './doorChecks.js';
import { refineReaderFormats, wiegandSchema } from './wiegandFormats.js';
import { powerSchema, refineAgentInputs } from './agentInputs.js';
import { keypadLockoutSchema } from './keypadLockout.js';
import { calendarDate, levelsSchema, refineLevels, schedulesSchema } from './levels.js';
import { emergencySchema, refineEmergency } from './emergencySchema.js';
import { areasSchema, interlocksSchema, refineDoorGroups } from './doorGroups.js';
import { isValidTimeZone } from './timeZone.js';
import { acrossKeys, EVEN_WITH_PROBLEMS } from './acrossKeys.js';
import { syslogSchema } from './auditSchema.js';
import { fleetSchema } from './fleetSchema.js';
import { metricsSchema, serverSchema } from './serverSchema.js';

// Defined in util/errors.ts, below the layers that refuse a configuration file (secret files, the holidays file).
export { EXIT_INVALID_CONFIG } from '../util/errors.js';

export const DEFAULT_DATA_DIR = '/var/lib/door-agent';
const DEFAULT_CONTROL_SOCKET = '/run/door-agent/control.sock';
/** sun_path holds 108 bytes with its terminating zero. */
const MAX_SOCKET_PATH_BYTES = 107;

const agentSchema = z.strictObject({
  // Appears in MQTT topics and event ids, so it must be topic-safe.
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "-" or "_"'),
  dataDir: z.string().min(1).default(DEFAULT_DATA_DIR),
  // Default: the system's zone (/etc/localtime), as an installer set it; config check prints the zone in use.
  timezone: z
    .string()
    .refine(isValidTimeZone, 'not an IANA time zone (e.g. Europe/Berlin)')
    .default(() => new Intl.DateTimeFormat().resolvedOptions().timeZone)
    // The default is the machine's own: the JSON Schema (schema/config.schema.json) states none.
    .meta({ default: undefined, description: "an IANA time zone, e.g. Europe/Berlin; default: the system's zone" }),
  /** The audit log / event outbox keeps at most this many events; the oldest are evicted and counted. */
  maxEvents: wholeNumber().min(1000).max(10_000_000).default(100_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  /** docs/logging.md: auto is journal under systemd's journal, pretty at a terminal, json otherwise. */
  logFormat: z.enum(['auto', 'pretty', 'json', 'journal']).default('auto'),
  /**
   * The board keeps the time across power cuts (a battery-backed RTC). Without it, a timed unlock is resumed
   * after a restart only once the clock is known to be synchronized (NTP): a board that boots hours behind
   * would otherwise take an expired unlock for a current one.
   */
  rtc: z.boolean().default(false),
  /**
   * The running daemon's control socket (docs/local-control.md): `door-agent unlock`, `lock`, `learn-card` and
   * `reader learn` reach it there; null: none. systemd's RuntimeDirectory makes /run/door-agent.
   */
  controlSocket: z
    .string()
    .min(1)
    .refine((path) => Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES, `a Unix socket's path is at most ${MAX_SOCKET_PATH_BYTES} bytes`)
    .nullable()
    .default(DEFAULT_CONTROL_SOCKET),
});

const serviceSchema = z.strictObject({
  baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  apiKeyFile: z.string().min(1).optional(),
  apiKeyIn: z.enum(['header', 'query']).default('header'),
  syncIntervalSeconds: seconds(10, 86_400).default(300),
  /**
   * The daemon's first sync after start waits a random delay between 0 and this, so doors started together (a
   * power cut, a deploy) do not all ask the service at once. 0: at once. Requests never wait.
   */
  startDelaySeconds: seconds(0, 3600).default(5),
  concurrency: wholeNumber().min(1).max(64).default(8),
  maxRemovalRatio: z.number().min(0).max(1).default(0.5),
  /** Each request to the service must answer within this. */
  timeoutSeconds: seconds(1, 300).default(10),
  /** `status` warns when the last successful sync is older than this. */
  warnCacheAgeSeconds: seconds(60, 30 * 86_400).default(3600),
});

/** A calendar date, YYYY-MM-DD, that exists (2026-02-30 does not). */
const holidayDate = calendarDate;

/** access.responders: still admitted during a lockdown; everyDoor: at every door, whatever their levels say. */
const respondersSchema = z
  .strictObject({
    groups: z.array(z.string().min(1)).default([]),
    policies: z.array(z.string().min(1)).default([]),
    everyDoor: z.boolean().default(false),
  })
  .refine((a) => a.groups.length + a.policies.length > 0, { message: 'list at least one group or policy' });

const accessSchema = z
  .strictObject({
    /** Members of these groups or policies may open every door of this agent, always (the level "every_door"). */
    groups: z.array(z.string().min(1)).default([]),
    policies: z.array(z.string().min(1)).default([]),
    /** Who may open which door, and when (see config/levels.ts). */
    levels: levelsSchema,
    /**
     * Smartcard entries with one of these labels (case-insensitive) are PINs: they open only from the keypad,
     * and the other entries only from a card read. The service stores PINs as smartcard entries.
     */
    pinLabels: z.array(z.string().trim().min(1)).min(1).default(['PIN']),
    /** Still admitted during a lockdown (besides the exit button): security staff, first responders. */
    responders: respondersSchema.optional(),
    /** Dates (YYYY-MM-DD, agent.timezone) on which unlock schedules do not apply and guest links are refused. */
    holidays: z.array(holidayDate).max(1000).default([]),
    /** A PIN typed with this change opens as usual and raises a silent duress alarm (off: no duress PINs). */
    duressPin: z.enum(['off', 'lastDigitPlusOne', 'lastDigitMinusOne']).default('off'),
    /**
     * A card number (decimal, leading zeros dropped) shorter than this is refused (card_too_short), and such
     * entries in the directory are flagged: they are most likely PINs stored under a label not in pinLabels.
     */
    minCardDigits: wholeNumber().min(1).max(20).default(6),
    /** A typed PIN shorter than this is refused (pin_too_short); a shorter PIN in the directory never opens. */
    minPinLength: wholeNumber().min(1).max(16).default(4),
    /** Wrong PINs at any of the agent's doors lock every keypad, for longer each time (see config/keypadLockout.ts). */
    keypadLockout: keypadLockoutSchema.optional(),
    /**
     * The offline limit: past this many hours without a successful sync only responders are admitted (guest links
     * keep their own validity; the exit button always works). Absent: no limit (the door decides on any cache).
     */
    maxCacheAgeHours: z.number().positive('must be a positive number of hours (leave it out for no limit)').optional(),
  })
  // Absent only from a board file that takes its configuration from the service (refineWhoMayOpen).
  .prefault({});

const mqttSchema = z.strictObject({
  url: z.url({ protocol: /^(mqtts?|wss?)$/, error: 'must be an mqtt://, mqtts://, ws:// or wss:// URL' }),
  username: z.string().min(1).optional(),
  passwordFile: z.string().min(1).optional(),
  caFile: z.string().min(1).optional(),
  certFile: z.string().min(1).optional(),
  keyFile: z.string().min(1).optional(),
  topicPrefix: z
    .string()
    .regex(/^[^#+\s]+$/, 'must not contain MQTT wildcards or spaces')
    .refine((p) => !p.startsWith('/') && !p.endsWith('/'), 'must not start or end with "/"')
    .default('door-agent'),
  commandSecretFile: z.string().min(1).optional(),
  commandMaxAgeSeconds: seconds(1, 3600).default(30),
  /** Guest links kept from MQTT at most (each at most 16 KiB): a broker client cannot fill the disk. */
  maxGuestLinks: wholeNumber().min(1).max(100_000).default(500),
  /**
   * Signed mode: a guest link must have been signed within this long (the service signs every live link again
   * each day), so a signed link captured from the broker and replayed after its revocation stops working.
   */
  guestLinkMaxAgeSeconds: seconds(86_400 + 3600, 90 * 86_400).default(7 * 86_400),
  /**
   * A time from the network (issued_at of signed messages) more than this far ahead of the agent's clock counts
   * as now + this (clamped, logged once as clock_skew); the agent's own clock stepping back more is clock_skew too.
   */
  futureSkewSeconds: seconds(1, 3600).default(300),
  /** Signed mode: a lockdown or holidays message signed longer ago is refused (the service re-signs them daily). */
  retainedMaxAgeSeconds: seconds(86_400 + 3600, 90 * 86_400).default(3 * 86_400),
  keepaliveSeconds: seconds(5, 600).default(15),
  /** 5 (default) or 4 (MQTT 3.1.1, for brokers without MQTT 5: replies then go to P/doors/<uuid>/reply). */
  protocolVersion: z.union([z.literal(4), z.literal(5)], { error: 'expected 4 or 5' }).default(5),
  homeAssistant: z
    .strictObject({
      discovery: z.boolean().default(true),
      prefix: z.string().min(1).default('homeassistant'),
      /** A file holding the code Home Assistant asks for before it unlocks (checked by the agent); none: no code. */
      codeFile: z.string().min(1).optional(),
      /** The device's "Visit" link in Home Assistant (an http(s) URL); none: no link. */
      configurationUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    })
    .prefault({}),
});

export const gpioSchema = z.discriminatedUnion('driver', [
  z.strictObject({
    driver: z.literal('chardev'),
    /** auto: the pin controller (label pinctrl-*, pinctrl-rp1 on a Pi 5); or a label, a name or a /dev path. */
    chip: z.string().min(1).default('auto'),
  }),
  z.strictObject({
    driver: z.literal('onoff'),
    chipBase: z.union([z.literal('auto'), wholeNumber().min(0)]).default('auto'),
  }),
  z.strictObject({
    driver: z.literal('simulated'),
    simulatedDir: z.string().min(1).default('/run/door-agent/gpio'),
  }),
]);

/**
 * The file as the reference service reads it: its `server` section and `mqtt`; the agent's sections may be
 * present (one file for a door that also runs the service) and are validated by the agent.
 */
export const serviceConfigSchema = z
  .strictObject({
    server: serverSchema,
    mqtt: mqttSchema.optional(),
    agent: z.unknown().optional(),
    metrics: z.unknown().optional(),
    service: z.unknown().optional(),
    access: z.unknown().optional(),
    schedules: z.unknown().optional(),
    gpio: z.unknown().optional(),
    doors: z.unknown().optional(),
    power: z.unknown().optional(),
    emergency: z.unknown().optional(),
    areas: z.unknown().optional(),
    interlocks: z.unknown().optional(),
    wiegand: z.unknown().optional(),
    fleet: z.unknown().optional(),
    syslog: z.unknown().optional(),
  })
  .superRefine(acrossKeys([refineAgentMqtt]), EVEN_WITH_PROBLEMS);
export type ServiceConfig = z.output<typeof serviceConfigSchema>;

/** The agents' logins are made over the service's own broker connection. */
function refineAgentMqtt(config: { server: { fleet?: { agentMqtt?: unknown } | undefined }; mqtt?: unknown }, ctx: z.RefinementCtx): void {
  if (config.server.fleet?.agentMqtt && !config.mqtt) {
    ctx.addIssue({
      code: 'custom',
      path: ['server', 'fleet', 'agentMqtt'],
      message: "needs the mqtt section: the service makes the agents' logins over its own broker connection (docs/fleet.md)",
    });
  }
}

export const configSchema = z
  .strictObject({
    agent: agentSchema,
    service: serviceSchema.optional(),
    access: accessSchema,
    /** Named weekly schedules of access levels. */
    schedules: schedulesSchema,
    mqtt: mqttSchema.optional(),
    metrics: metricsSchema('127.0.0.1:9464').optional(),
    /** Every audit event sent to a SIEM as syslog, for a site without a service (docs/audit.md); off without it. */
    syslog: syslogSchema.optional(),
    // Validated by the service's schema (serverSchema.ts), when one file serves both.
    server: z.unknown().describe("the reference service's section, when one file serves both; the service checks it").optional(),
    gpio: gpioSchema.prefault({ driver: 'onoff' }),
    /** The fleet (docs/fleet.md): an agent enrolled with the service takes its configuration from it. */
    fleet: fleetSchema.optional(),
    // At least one when listed; absent only with a fleet section (refineDoorsPresent): the service gives them.
    doors: z.array(doorSchema).min(1, 'configure at least one door').default([]),
    /** The agent's power inputs: mains present, battery low (config/agentInputs.ts). */
    power: powerSchema.optional(),
    /** The fire alarm input (config/emergencySchema.ts). */
    emergency: emergencySchema.optional(),
    /** Doors that work together (config/doorGroups.ts, docs/areas.md): areas and interlocks. */
    areas: areasSchema,
    interlocks: interlocksSchema,
    /** The site's own Wiegand card formats (config/wiegandFormats.ts, docs/hardware.md "Card formats"). */
    wiegand: wiegandSchema,
  })
  // The checks across keys, also on a file with other problems (config/acrossKeys.ts): one pass names them all.
  .superRefine(
    acrossKeys([
      refineDoorsPresent,
      refineWhoMayOpen,
      refineDoors,
      refineReaderFormats,
      (config, ctx) => refineLevels(config, ctx),
      refineAgentInputs,
      refineCacheAge,
      refineEmergency,
      refineDoorGroups,
    ]),
    EVEN_WITH_PROBLEMS,
  );

/** A board file with a `fleet` section and no doors yet: its doors (and who opens them) come from the service. */
const takesDoorsFromService = (config: { fleet?: unknown; doors: readonly unknown[] }) => config.fleet !== undefined && config.doors.length === 0;

function refineDoorsPresent(config: { fleet?: unknown; doors: readonly unknown[] }, ctx: z.RefinementCtx): void {
  if (config.doors.length === 0 && config.fleet === undefined) {
    ctx.addIssue({ code: 'custom', path: ['doors'], message: 'required: a list of doors (or a fleet section: the service gives them, docs/fleet.md)' });
  }
}

function refineWhoMayOpen(
  config: { fleet?: unknown; doors: readonly unknown[]; access: { groups: readonly unknown[]; policies: readonly unknown[]; levels: readonly unknown[] } },
  ctx: z.RefinementCtx,
): void {
  const { groups, policies, levels } = config.access;
  if (takesDoorsFromService(config) || groups.length + policies.length + levels.length > 0) return;
  ctx.addIssue({
    code: 'custom',
    path: ['access'],
    message: 'list at least one group or policy whose members may open every door (access.groups, access.policies), or access levels (access.levels)',
  });
}

function refineCacheAge(config: { access: { maxCacheAgeHours?: number | undefined }; service?: unknown }, ctx: z.RefinementCtx): void {
  if (config.access.maxCacheAgeHours !== undefined && !config.service) {
    ctx.addIssue({
      code: 'custom',
      path: ['access', 'maxCacheAgeHours'],
      message: 'needs a service section: the age is measured from the last successful sync (an imported cache is never synced)',
    });
  }
}

/** The file as validated, before normalization (config/load.ts turns it into AgentOptions). */
export type Config = z.output<typeof configSchema>;
