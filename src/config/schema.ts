import { z } from 'zod';

/** Exit code for an invalid configuration (sysexits EX_CONFIG); systemd: RestartPreventExitStatus=78. */
export const EXIT_INVALID_CONFIG = 78;

const bcmPin = z.number().int().min(0).max(63);
const seconds = (min: number, max: number) => z.number().int().min(min).max(max);

function isValidTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const agentSchema = z.strictObject({
  // Appears in MQTT topics and event ids, so it must be topic-safe.
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "-" or "_"'),
  dataDir: z.string().min(1).default('/var/lib/door-agent'),
  // Default: the system's zone (/etc/localtime), as an installer set it; config check prints the zone in use.
  timezone: z
    .string()
    .refine(isValidTimeZone, 'not an IANA time zone (e.g. Europe/Berlin)')
    .default(() => new Intl.DateTimeFormat().resolvedOptions().timeZone),
  /** The audit log / event outbox keeps at most this many events; the oldest are evicted and counted. */
  maxEvents: z.number().int().min(1000).max(10_000_000).default(100_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  /**
   * The board keeps the time across power cuts (a battery-backed RTC). Without it, a timed unlock is resumed
   * after a restart only once the clock is known to be synchronized (NTP): a board that boots hours behind
   * would otherwise take an expired unlock for a current one.
   */
  rtc: z.boolean().default(false),
});

const serviceSchema = z.strictObject({
  baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  apiKeyFile: z.string().min(1).optional(),
  apiKeyIn: z.enum(['header', 'query']).default('header'),
  syncIntervalSeconds: seconds(10, 86_400).default(300),
  concurrency: z.number().int().min(1).max(64).default(8),
  maxRemovalRatio: z.number().min(0).max(1).default(0.5),
  /** Each request to the service must answer within this. */
  timeoutSeconds: seconds(1, 300).default(10),
  /** `status` warns when the last successful sync is older than this. */
  warnCacheAgeSeconds: seconds(60, 30 * 86_400).default(3600),
});

const accessSchema = z
  .strictObject({
    groups: z.array(z.string().min(1)).default([]),
    policies: z.array(z.string().min(1)).default([]),
    /**
     * Smartcard entries with one of these labels (case-insensitive) are PINs: they open only from the keypad,
     * and the other entries only from a card read. The service stores PINs as smartcard entries.
     */
    pinLabels: z.array(z.string().trim().min(1)).min(1).default(['PIN']),
  })
  .refine((a) => a.groups.length + a.policies.length > 0, {
    message: 'list at least one group or policy whose members may open these doors',
  });

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
  maxGuestLinks: z.number().int().min(1).max(100_000).default(500),
  /**
   * Signed mode: a guest link must have been signed within this long (the service signs every live link again
   * each day), so a signed link captured from the broker and replayed after its revocation stops working.
   */
  guestLinkMaxAgeSeconds: seconds(86_400 + 3600, 90 * 86_400).default(7 * 86_400),
  keepaliveSeconds: seconds(5, 600).default(15),
  /** 5 (default) or 4 (MQTT 3.1.1, for brokers without MQTT 5: replies then go to P/doors/<uuid>/reply). */
  protocolVersion: z.union([z.literal(4), z.literal(5)], { error: 'expected 4 or 5' }).default(5),
  homeAssistant: z
    .strictObject({
      discovery: z.boolean().default(true),
      prefix: z.string().min(1).default('homeassistant'),
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
    chipBase: z.union([z.literal('auto'), z.number().int().min(0)]).default('auto'),
  }),
  z.strictObject({
    driver: z.literal('simulated'),
    simulatedDir: z.string().min(1).default('/run/door-agent/gpio'),
  }),
]);

const level = z.literal([0, 1], { error: 'expected 0 or 1' });
/** An input's bias resistor (character device only; sysfs cannot set one). */
const pull = z.enum(['up', 'down', 'none']);
const BAUD_RATES = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400] as const;
// An input level must hold this long before it counts (contact bounce, button chatter).
const debounce = z.number().int().min(0).max(5000).default(50);

const serialReaderSchema = z.strictObject({
  type: z.literal('serial'),
  path: z.string().min(1),
  baudRate: z
    .number()
    .refine((b) => (BAUD_RATES as readonly number[]).includes(b), `expected one of ${BAUD_RATES.join(', ')}`)
    .default(9600),
  cardFormat: z.enum(['decimal', 'hex']).default('decimal'),
  /** lines: CR/LF-terminated cards, keys and tokens; rdm6300: the STX/ETX frames of 125 kHz UART modules. */
  format: z.enum(['lines', 'rdm6300']).default('lines'),
  /** rdm6300: the ID's last 32 bits as decimal (what most badges print), or the whole 40-bit ID. */
  numbering: z.enum(['last32', 'whole']).default('last32'),
});

const wiegandReaderSchema = z.strictObject({
  type: z.literal('wiegand'),
  d0: bcmPin,
  d1: bcmPin,
  /** auto: 26, 34 or 37 bits, whatever arrives; a number refuses every other length. */
  format: z.literal(['auto', 26, 34, 37], { error: 'expected auto, 26, 34 or 37' }).default('auto'),
  /** data: the whole data field as a decimal integer; facility_card: facility * 65536 + card. */
  numbering: z.enum(['data', 'facility_card']).default('data'),
  // Idle high: a pull-up keeps an unplugged reader's lines quiet instead of floating into noise.
  pull: pull.default('up'),
});

const keyboardReaderSchema = z.strictObject({
  type: z.literal('keyboard'),
  /** The input device, by its stable name: /dev/input/by-id/usb-<maker>_<model>-event-kbd. */
  path: z.string().min(1),
  cardFormat: z.enum(['decimal', 'hex']).default('decimal'),
});

const OSDP_BAUD_RATES = [9600, 19200, 38400, 57600, 115200, 230400] as const;

const osdpReaderSchema = z.strictObject({
  type: z.literal('osdp'),
  /** The RS-485 adapter; several doors may share it at different addresses. */
  path: z.string().min(1),
  baudRate: z
    .number()
    .refine((b) => (OSDP_BAUD_RATES as readonly number[]).includes(b), `expected one of ${OSDP_BAUD_RATES.join(', ')}`)
    .default(9600),
  address: z.number().int().min(0).max(126),
  /** The secure channel key, 32 hex digits, mode 0600. Without it (and without installMode) the bus is plain. */
  scbkFile: z.string().min(1).optional(),
  /** Handshake with the standard's default key SCBK-D: only while installing a new reader. */
  installMode: z.boolean().default(false),
  numbering: z.enum(['data', 'facility_card']).default('data'),
  /** crc: CRC-16 on every packet (default); checksum: the 8-bit checksum, for a reader that offers only that. */
  check: z.enum(['crc', 'checksum']).default('crc'),
});

// `type` may be left out for a serial reader (every configuration before Wiegand readers).
const readerSchema = z.preprocess(
  (value) => (value !== null && typeof value === 'object' && !Array.isArray(value) && !('type' in value) ? { type: 'serial', ...value } : value),
  z.discriminatedUnion('type', [serialReaderSchema, wiegandReaderSchema, keyboardReaderSchema, osdpReaderSchema], { error: 'expected type serial, wiegand, keyboard or osdp' }),
);

const doorSchema = z.strictObject({
  uuid: z.uuid({ error: 'must be the door resource UUID' }),
  resourceId: z.number().int().min(0),
  name: z.string().min(1).max(100).optional(),
  relay: z.strictObject({ pin: bcmPin, activeLow: z.boolean().default(false) }),
  failMode: z.enum(['secure', 'safe']).default('secure'),
  unlockSeconds: seconds(1, 3600).default(5),
  maxUnlockSeconds: seconds(0, 604_800).default(0),
  contact: z
    .strictObject({ pin: bcmPin, openLevel: level.default(1), debounceMs: debounce, pull: pull.default('none') })
    .optional(),
  exitButton: z
    .strictObject({ pin: bcmPin, activeLevel: level.default(0), debounceMs: debounce, pull: pull.default('none') })
    .optional(),
  /** With a contact: a timed unlock ends as soon as the door has opened and closed again. */
  relockOnClose: z.boolean().default(true),
  heldOpenSeconds: seconds(1, 86_400).default(30),
  reader: readerSchema.optional(),
  mode: z.enum(['card_or_pin', 'card_and_pin']).default('card_or_pin'),
  keypadLockout: z
    .strictObject({
      failures: z.number().int().min(1).max(100).default(5),
      windowSeconds: seconds(1, 86_400).default(60),
      lockoutSeconds: seconds(1, 86_400).default(60),
    })
    .prefault({}),
  /** After `failures` unknown cards or tokens within `windowSeconds`, the reader refuses them for `lockoutSeconds`. */
  cardLockout: z
    .strictObject({
      failures: z.number().int().min(1).max(1000).default(10),
      windowSeconds: seconds(1, 86_400).default(60),
      lockoutSeconds: seconds(1, 86_400).default(60),
    })
    .prefault({}),
});

/** The reference service's own section (`door-agent service`); it shares the file and the mqtt section. */
export const serverSchema = z
  .strictObject({
    listen: z
      .string()
      .regex(/^[A-Za-z0-9.\-\[\]:]+:\d{1,5}$/, 'expected HOST:PORT, e.g. 127.0.0.1:8080')
      .default('127.0.0.1:8080'),
    dataDir: z.string().min(1).default('/var/lib/door-agent-service'),
    lockReplyTimeoutSeconds: seconds(1, 120).default(5),
    resources: z
      .array(
        z.strictObject({
          resourceId: z.number().int().min(0),
          uuid: z.uuid({ error: 'must be the resource UUID' }),
          type: z.enum(['DOOR', 'COMPUTER']),
          name: z.string().min(1).max(100),
        }),
      )
      .default([]),
    smtp: z.strictObject({ url: z.url({ protocol: /^smtps?$/ }), from: z.string().min(3) }).optional(),
  })
  .superRefine((server, ctx) => {
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
  });

/**
 * The file as the reference service reads it: its `server` section and `mqtt`; the agent's sections may be
 * present (one file for a door that also runs the service) and are validated by the agent.
 */
export const serviceConfigSchema = z.strictObject({
  server: serverSchema,
  mqtt: mqttSchema.optional(),
  agent: z.unknown().optional(),
  service: z.unknown().optional(),
  access: z.unknown().optional(),
  gpio: z.unknown().optional(),
  doors: z.unknown().optional(),
});
export type ServiceConfig = z.output<typeof serviceConfigSchema>;

export const configSchema = z
  .strictObject({
    agent: agentSchema,
    service: serviceSchema.optional(),
    access: accessSchema,
    mqtt: mqttSchema.optional(),
    // The reference service's section, when one file serves both: validated by the service's schema.
    server: z.unknown().optional(),
    gpio: gpioSchema.prefault({ driver: 'onoff' }),
    doors: z.array(doorSchema).min(1, 'configure at least one door'),
  })
  .superRefine((config, ctx) => {
    const uuids = new Map<string, number>();
    const resourceIds = new Map<number, number>();
    const pins = new Map<number, string>();
    const readers = new Map<string, number>();
    const osdpBuses = new Map<string, { baudRate: number; door: number; addresses: Map<number, number> }>();
    config.doors.forEach((door, i) => {
      const seenUuid = uuids.get(door.uuid.toLowerCase());
      if (seenUuid !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['doors', i, 'uuid'], message: `same uuid as doors[${seenUuid}]` });
      } else uuids.set(door.uuid.toLowerCase(), i);
      const seenResource = resourceIds.get(door.resourceId);
      if (seenResource !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, 'resourceId'],
          message: `same resourceId as doors[${seenResource}]`,
        });
      } else resourceIds.set(door.resourceId, i);
      const wiegand = door.reader?.type === 'wiegand' ? door.reader : undefined;
      const doorPins: Array<[string[], number | undefined]> = [
        [['relay', 'pin'], door.relay.pin],
        [['contact', 'pin'], door.contact?.pin],
        [['exitButton', 'pin'], door.exitButton?.pin],
        [['reader', 'd0'], wiegand?.d0],
        [['reader', 'd1'], wiegand?.d1],
      ];
      for (const [where, pin] of doorPins) {
        if (pin === undefined) continue;
        const owner = pins.get(pin);
        if (owner !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, ...where],
            message: `GPIO ${pin} is already used by ${owner}`,
          });
        } else pins.set(pin, `doors[${i}].${where.join('.')}`);
      }
      if (wiegand?.numbering === 'facility_card' && wiegand.format !== 26 && wiegand.format !== 34) {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, 'reader', 'numbering'],
          message:
            'facility_card (facility * 65536 + card) is exact only for 26- and 34-bit cards (16-bit card field): set format: 26 or 34, or use numbering: data',
        });
      }
      if (config.gpio.driver === 'onoff') {
        if (wiegand) {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, 'reader', 'type'],
            message: 'a Wiegand reader needs gpio.driver: chardev (sysfs cannot see its 50 µs pulses)',
          });
        }
        for (const input of ['contact', 'exitButton'] as const) {
          const setting = door[input];
          if (setting && setting.pull !== 'none') {
            ctx.addIssue({
              code: 'custom',
              path: ['doors', i, input, 'pull'],
              message: `gpio.driver onoff (sysfs) cannot set a pull-${setting.pull}: use gpio.driver: chardev, or pull: none with a resistor`,
            });
          }
        }
      }
      if (door.reader?.type === 'serial' && door.reader.format === 'rdm6300' && door.reader.cardFormat !== 'decimal') {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, 'reader', 'cardFormat'],
          message: 'an rdm6300 reader sends binary frames whose IDs become decimal numbers: leave cardFormat out',
        });
      }
      if (door.reader?.type === 'osdp') {
        const bus = osdpBuses.get(door.reader.path);
        if (bus && bus.baudRate !== door.reader.baudRate) {
          ctx.addIssue({ code: 'custom', path: ['doors', i, 'reader', 'baudRate'], message: `the OSDP bus ${door.reader.path} runs at ${bus.baudRate} for doors[${bus.door}]` });
        }
        const sameAddress = bus?.addresses.get(door.reader.address);
        if (sameAddress !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['doors', i, 'reader', 'address'], message: `OSDP address ${door.reader.address} on ${door.reader.path} is already doors[${sameAddress}]` });
        }
        if (!bus) osdpBuses.set(door.reader.path, { baudRate: door.reader.baudRate, door: i, addresses: new Map([[door.reader.address, i]]) });
        else bus.addresses.set(door.reader.address, i);
        if (readers.has(door.reader.path)) {
          ctx.addIssue({ code: 'custom', path: ['doors', i, 'reader', 'path'], message: `reader ${door.reader.path} is already used by doors[${readers.get(door.reader.path)}]` });
        }
        if (door.reader.numbering === 'facility_card') {
          ctx.addIssue({ code: 'custom', path: ['doors', i, 'reader', 'numbering'], message: 'facility_card is exact only for 26- and 34-bit cards: an OSDP reader may send any format; use numbering: data' });
        }
      }
      if (door.reader?.type === 'serial' || door.reader?.type === 'keyboard') {
        if (osdpBuses.has(door.reader.path)) {
          ctx.addIssue({ code: 'custom', path: ['doors', i, 'reader', 'path'], message: `${door.reader.path} is an OSDP bus of another door` });
        }
        const seenReader = readers.get(door.reader.path);
        if (seenReader !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, 'reader', 'path'],
            message: `reader ${door.reader.path} is already used by doors[${seenReader}]`,
          });
        } else readers.set(door.reader.path, i);
      }
      if (door.maxUnlockSeconds > 0 && door.unlockSeconds > door.maxUnlockSeconds) {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, 'unlockSeconds'],
          message: `is longer than maxUnlockSeconds (${door.maxUnlockSeconds})`,
        });
      }
    });
  });

/** The file as validated, before normalization (config/load.ts turns it into AgentOptions). */
export type Config = z.output<typeof configSchema>;
