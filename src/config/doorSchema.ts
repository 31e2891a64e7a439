import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { readerFormatSchema } from './wiegandFormats.js';
import { keypadLockoutSchema } from './keypadLockout.js';
import { timeMappingSchema } from '../api/shapes.js';
import { OSDP_BAUD_RATES } from '../readers/osdp/comset.js';
import { textProblem } from '../readers/osdp/textOutput.js';

export const bcmPin = wholeNumber().min(0).max(63).describe('a BCM GPIO number, 0-63');
export const seconds = (min: number, max: number) => wholeNumber().min(min).max(max);

export const level = z.literal([0, 1], { error: 'expected 0 or 1' });
/** An input's bias resistor (character device only; sysfs cannot set one). */
export const pull = z.enum(['up', 'down', 'none']);
const BAUD_RATES = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400] as const;
// An input level must hold this long before it counts (contact bounce, button chatter).
export const debounce = wholeNumber().min(0).max(5000).default(50);

/**
 * Durations in ms, alternately on and off, starting on: what an LED or a buzzer line plays for one outcome.
 * Empty: the line stays off (a single LED wire that turns a red LED green should not flash for a denial).
 */
const pattern = z.array(wholeNumber().min(10, 'at least 10 ms').max(10_000, 'at most 10000 ms')).max(32);

/**
 * A reader's LED or buzzer line driven by the agent (Wiegand readers have both, usually active low: pulled to
 * ground to light or sound). Each outcome has a default pattern; `patterns` overrides any of them.
 */
const signalLine = (defaults: SignalPatterns) =>
  z.strictObject({
    pin: bcmPin,
    activeLevel: level.default(0),
    patterns: z
      .strictObject({
        grant: pattern.default(defaults.grant),
        deny: pattern.default(defaults.deny),
        lockedOut: pattern.optional(),
        lockdown: pattern.default(defaults.lockdown),
        awaiting: pattern.default(defaults.awaiting),
      })
      .prefault({})
      // A lockout is a refusal: the deny pattern unless one is given.
      .transform((p) => ({ ...p, lockedOut: p.lockedOut ?? p.deny })),
  });

interface SignalPatterns {
  grant: number[];
  deny: number[];
  lockdown: number[];
  /** A two-person door's first tap (docs/areas.md): three short flashes and two beeps, "one more, please". */
  awaiting: number[];
}
/** @internal */
export const LED_PATTERNS: SignalPatterns = {
  grant: [2000],
  deny: [200, 200, 200, 200, 200],
  lockdown: [1000, 300, 1000, 300, 1000],
  awaiting: [150, 150, 150, 150, 150],
};
/** @internal */
export const BUZZER_PATTERNS: SignalPatterns = { grant: [150], deny: [400, 100, 400], lockdown: [1500], awaiting: [100, 100, 100] };
// Each one entry of the JSON Schema's $defs, as the reader.
const signalLines = {
  led: signalLine(LED_PATTERNS).meta({ id: 'readerLed', description: "a reader's LED line driven by the agent" }).optional(),
  buzzer: signalLine(BUZZER_PATTERNS).meta({ id: 'readerBuzzer', description: "a reader's buzzer line driven by the agent" }).optional(),
};

/** Lines sent back to a serial reader that takes commands (an LED or a beeper of its own); "\r\n" is not added. */
const replyLine = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[\x20-\x7e\r\n\t]+$/, 'printable ASCII, with \\r, \\n or \\t');
const serialReplies = z.strictObject({
  grant: replyLine.optional(),
  deny: replyLine.optional(),
  lockedOut: replyLine.optional(),
  lockdown: replyLine.optional(),
  awaiting: replyLine.optional(),
});

/** How a reader's card line reads: decimal digits, or hex digits (leading zeros dropped either way). */
const cardFormat = z.enum(['decimal', 'hex']).describe('decimal: a card is sent as decimal digits; hex: as hex digits');

const serialReaderSchema = z.strictObject({
  // May be left out (readerSchema below): the JSON Schema says so with the default.
  type: z.literal('serial').default('serial'),
  ...signalLines,
  replies: serialReplies.optional(),
  path: z.string().min(1),
  baudRate: z.literal(BAUD_RATES, { error: `expected one of ${BAUD_RATES.join(', ')}` }).default(9600),
  cardFormat: cardFormat.default('decimal'),
  /** lines: CR/LF-terminated cards, keys and tokens; rdm6300: the STX/ETX frames of 125 kHz UART modules. */
  format: z.enum(['lines', 'rdm6300']).default('lines'),
  /** rdm6300: the ID's last 32 bits as decimal (what most badges print), or the whole 40-bit ID. */
  numbering: z.enum(['last32', 'whole']).default('last32'),
});

const wiegandNumbering = z.enum(['data', 'facility_card', 'printed']).default('data');

const wiegandReaderSchema = z.strictObject({
  type: z.literal('wiegand'),
  ...signalLines,
  d0: bcmPin,
  d1: bcmPin,
  /** auto: every format, by length (an ambiguous length refused); a name or a list of names: those alone. */
  format: readerFormatSchema,
  /** data: the data bits as one decimal integer; facility_card: facility * 65536 + card; printed: facility:card. */
  numbering: wiegandNumbering,
  // Idle high: a pull-up keeps an unplugged reader's lines quiet instead of floating into noise.
  pull: pull.default('up'),
});

const keyboardReaderSchema = z.strictObject({
  type: z.literal('keyboard'),
  ...signalLines,
  /** The input device, by its stable name: /dev/input/by-id/usb-<maker>_<model>-event-kbd. */
  path: z.string().min(1),
  cardFormat: cardFormat.default('decimal'),
});

/** A text for an OSDP reader's display (textOutput.ts says why the limits). */
const osdpText = z.string().superRefine((text, ctx) => {
  const problem = textProblem(text);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const osdpReaderSchema = z.strictObject({
  type: z.literal('osdp'),
  /** The RS-485 adapter; several doors may share it at different addresses. */
  path: z.string().min(1),
  baudRate: z.literal(OSDP_BAUD_RATES, { error: `expected one of ${OSDP_BAUD_RATES.join(', ')}` }).default(9600),
  address: wholeNumber().min(0).max(126),
  /** The secure channel key, 32 hex digits, mode 0600. Without it (and without installMode) the bus is plain. */
  scbkFile: z.string().min(1).optional(),
  /** Handshake with the standard's default key SCBK-D: only while installing a new reader. */
  installMode: z.boolean().default(false),
  /** No plain OSDP: a missing scbkFile (or install mode) is an error, not a warning. */
  requireSecureChannel: z.boolean().default(false),
  /** The formats its raw card data (osdp_RAW) is decoded by, and the numbering, as a Wiegand reader's. */
  format: readerFormatSchema,
  numbering: wiegandNumbering,
  /** crc: CRC-16 on every packet (default); checksum: the 8-bit checksum, for a reader that offers only that. */
  check: z.enum(['crc', 'checksum']).default('crc'),
  /** osdp_TEXT with the decision, on a reader with a display; none without this key. */
  text: z.strictObject({ granted: osdpText.optional(), denied: osdpText.optional(), seconds: wholeNumber().min(1).max(255).default(3) }).optional(),
});

const pn532ReaderSchema = z.strictObject({
  type: z.literal('pn532'),
  ...signalLines,
  /** The serial port the module's HSU lines are on: /dev/serial0 on a Pi's header, /dev/ttyUSB0 through an adapter. */
  path: z.string().min(1),
  baudRate: z.literal(BAUD_RATES, { error: `expected one of ${BAUD_RATES.join(', ')} (a PN532 starts at 115200)` }).default(115200),
  /** How often the field is asked for a card (ms). */
  pollMs: wholeNumber().min(50).max(5000).default(150),
  /** A card must be gone this long (ms) before the same card is a new tap. */
  releaseMs: wholeNumber().min(100).max(60_000).default(500),
  /** msb_first: the UID's bytes in the order the PN532 reports them, first byte most significant; lsb_first: reversed. */
  uidByteOrder: z.enum(['msb_first', 'lsb_first']).default('msb_first'),
});

// `type` may be left out for a serial reader (every configuration before Wiegand readers).
const readerSchema = z
  .preprocess(
    (value) => (value !== null && typeof value === 'object' && !Array.isArray(value) && !('type' in value) ? { type: 'serial', ...value } : value),
    z.discriminatedUnion('type', [serialReaderSchema, wiegandReaderSchema, keyboardReaderSchema, osdpReaderSchema, pn532ReaderSchema], {
      error: 'expected type serial, wiegand, keyboard, osdp or pn532',
    }),
  )
  // One entry of the JSON Schema's $defs (schema/config.schema.json), not a copy per door key that takes a reader.
  .meta({ id: 'reader', description: 'a card reader (docs/hardware.md): type serial (the default), wiegand, keyboard, osdp or pn532' });

/** Who is still admitted during a lockdown, or who starts a first-person-in schedule: groups and policies. */
const memberPolicySchema = z
  .strictObject({
    groups: z.array(z.string().min(1)).default([]),
    policies: z.array(z.string().min(1)).default([]),
  })
  .refine((a) => a.groups.length + a.policies.length > 0, { message: 'list at least one group or policy' });

export const doorSchema = z.strictObject({
  uuid: z.uuid({ error: 'must be the door resource UUID' }).describe("the door's resource UUID in the service"),
  resourceId: wholeNumber().min(0).describe("the service's resource id of this door, e.g. 12"),
  name: z.string().min(1).max(100).describe('how logs, MQTT and Home Assistant name the door; default: Door <resourceId>').optional(),
  relay: z.strictObject({ pin: bcmPin, activeLow: z.boolean().default(false) }),
  failMode: z.enum(['secure', 'safe']).describe('secure: energize to unlock, a strike; safe: energize to lock, a maglock').default('secure'),
  unlockSeconds: seconds(1, 3600).describe('how long a granted card unlocks the door').default(5),
  maxUnlockSeconds: seconds(0, 604_800).default(0),
  contact: z
    .strictObject({
      pin: bcmPin,
      openLevel: level.describe('the input level while the door is open').default(1),
      debounceMs: debounce,
      pull: pull.default('none'),
    })
    .optional(),
  exitButton: z.strictObject({ pin: bcmPin, activeLevel: level.default(0), debounceMs: debounce, pull: pull.default('none') }).optional(),
  /** With a contact: a timed unlock ends as soon as the door has opened and closed again. */
  relockOnClose: z.boolean().default(true),
  heldOpenSeconds: seconds(1, 86_400).describe('with a contact: how long the door may stand open before door_held_open').default(30),
  /**
   * With a contact: driven locked while the door stands open, the lock is reported JAMMED to Home Assistant once
   * the door still stands open this long (docs/mqtt.md, "Home Assistant").
   */
  jammedAfterSeconds: seconds(1, 3600).default(3),
  /** The entry reader alone (the shorthand of `readers: { entry }`). */
  reader: readerSchema.optional(),
  /** An entry and an exit reader (docs/areas.md): a tap's direction is the reader it was made at. */
  readers: z
    .strictObject({ entry: readerSchema.optional(), exit: readerSchema.optional() })
    .refine((r) => r.entry !== undefined || r.exit !== undefined, { message: 'give an entry or an exit reader (or both)' })
    .optional(),
  /** The door opens only for two different authorized holders within windowSeconds (docs/areas.md). */
  twoPerson: z.strictObject({ windowSeconds: seconds(1, 300).default(15) }).optional(),
  /** A tamper switch (the controller's or the reader's enclosure): tamper events and an MQTT alarm. */
  tamper: z.strictObject({ pin: bcmPin, activeLevel: level.default(1), debounceMs: debounce, pull: pull.default('none') }).optional(),
  /** Hours the door is held unlocked, in agent.timezone: a guest link's time_mapping (7 weekdays from Sunday). */
  unlockSchedule: timeMappingSchema.describe('7 weekdays from Sunday, each a list of [from, to] hours, e.g. [[8, 18]]').optional(),
  /** The schedule starts each day only once a member of these groups or policies was granted in its hours. */
  firstPersonIn: memberPolicySchema.optional(),
  mode: z.enum(['card_or_pin', 'card_and_pin']).default('card_or_pin'),
  /** Before the keypad lockout became agent-wide (access.keypadLockout): still accepted, the strictest values win. */
  keypadLockout: keypadLockoutSchema.optional(),
  /**
   * After `failures` refused cards or tokens within `windowSeconds`, the reader refuses cards until `quietSeconds`
   * after the last attempt, and at most `lockoutSeconds`: someone else's attempts never keep a valid card out long.
   */
  cardLockout: z
    .strictObject({
      failures: wholeNumber().min(1).max(1000).default(10),
      windowSeconds: seconds(1, 86_400).default(60),
      // More than 30 (the default was 60 before issue 32) is taken as 30, with a warning: refusing it would keep
      // an upgraded door's service down.
      lockoutSeconds: seconds(1, 86_400).default(30),
      quietSeconds: wholeNumber().min(1).max(5, 'at most 5: the next valid card after a stream of guesses must get in within 5 s').default(3),
    })
    .prefault({}),
});
