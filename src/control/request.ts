import * as z from 'zod';
import { MAX_UNLOCK_SECONDS } from '../core/lockState.js';
import { DoorAgentError } from '../util/errors.js';
import { problemsFromZod } from '../util/issues.js';
import { MAX_FILE_BYTES } from '../readers/osdp/fileTransfer.js';

/**
 * The control socket's wire format (docs/local-control.md): one request per connection, a line of JSON; the daemon
 * answers with lines of JSON, the last one `done` or `error`, then closes. Both sides validate what they read.
 */

/** A request line longer than this is refused unread. */
export const MAX_REQUEST_BYTES = 4096;
/** The longest learn session (`reader learn --timeout`, `learn-card --seconds`). */
const MAX_LEARN_SECONDS = 3600;

const who = z
  .string({ error: 'must be the name of the Unix user asking (a string)' })
  .regex(/^[^\s\p{Cc}]{1,64}$/u, 'must be a Unix user name: 1-64 characters, no spaces');
const doorName = z.string({ error: 'must name a door (its name or uuid, as a string)' }).min(1, 'must name a door (its name or uuid)').max(256);
const readerName = z.string({ error: 'must name a reader (a string)' }).min(1).max(256);
const unlockSeconds = z
  .number({ error: 'must be a whole number of seconds' })
  .int('must be a whole number of seconds')
  .min(1, `must be from 1 to ${MAX_UNLOCK_SECONDS} s`)
  .max(MAX_UNLOCK_SECONDS, `must be from 1 to ${MAX_UNLOCK_SECONDS} s`);
const learnSeconds = z
  .number({ error: 'must be a whole number of seconds' })
  .int('must be a whole number of seconds')
  .min(1, `must be from 1 to ${MAX_LEARN_SECONDS} s`)
  .max(MAX_LEARN_SECONDS, `must be from 1 to ${MAX_LEARN_SECONDS} s`);

const ACTIONS = ['unlock', 'lock', 'reader-learn', 'learn-card', 'health', 'reader-firmware'] as const;

/**
 * A reader firmware request: the file's size and SHA-256 here, its bytes right after the request's line (exactly
 * `size` of them, docs/local-control.md); `expectVersion`, the firmware the reader must name afterwards.
 */
const firmwareRequest = z.strictObject({
  action: z.literal('reader-firmware'),
  reader: readerName,
  size: z
    .number({ error: "must be the file's size in bytes" })
    .int("must be the file's size in bytes")
    .min(1, `must be from 1 to ${MAX_FILE_BYTES} bytes`)
    .max(MAX_FILE_BYTES, `must be from 1 to ${MAX_FILE_BYTES} bytes`),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be the SHA-256 of the file, 64 lower-case hex digits'),
  name: z.string().max(256).optional(),
  expectVersion: z
    .string()
    .regex(/^\d{1,3}\.\d{1,3}\.\d{1,3}$/, 'must be a firmware version as osdp_PDID names it, such as 3.5.0')
    .optional(),
  user: who,
});

const requestSchema = z.discriminatedUnion(
  'action',
  [
    z.strictObject({ action: z.literal('unlock'), door: doorName, seconds: unlockSeconds.optional(), user: who }),
    z.strictObject({ action: z.literal('lock'), door: doorName, user: who }),
    z.strictObject({ action: z.literal('reader-learn'), reader: readerName.optional(), seconds: learnSeconds, user: who }),
    z.strictObject({ action: z.literal('learn-card'), reader: readerName.optional(), seconds: learnSeconds, user: who }),
    z.strictObject({ action: z.literal('health') }),
    firmwareRequest,
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? `must be one of ${ACTIONS.join(', ')}` : undefined) },
);

export type ControlRequest = z.infer<typeof requestSchema>;
export type RequestOf<A extends ControlRequest['action']> = Extract<ControlRequest, { action: A }>;

/** A request the daemon refuses, naming the field at fault when there is one. */
export class RequestError extends DoorAgentError {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

/** A request line, parsed and validated before anything touches a door; a RequestError names what is wrong. */
export function parseRequest(line: string): ControlRequest {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (err) {
    throw new RequestError(`the request is not JSON (${(err as Error).message})`);
  }
  const parsed = requestSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const problems = problemsFromZod(parsed.error.issues);
  const first = problems[0];
  throw new RequestError(problems.map((p) => `${p.path}: ${p.message}`).join('; '), first?.path === '(top level)' ? undefined : first?.path);
}

const level = z.union([z.literal(0), z.literal(1)]);
/** A link the daemon has (null: not configured): whether it was reached since the daemon started. */
const linkHealth = z.strictObject({ reached: z.boolean() }).nullable();

/** The `health` action's answer (docs/local-control.md, "Health"): what an update checks before it calls a version good. */
const healthFactsSchema = z.strictObject({
  version: z.string(),
  doors: z.array(
    z.strictObject({
      name: z.string(),
      uuid: z.string(),
      lock: z.enum(['LOCKED', 'UNLOCKED']).nullable(),
      /** The relay as it reads, and the level the lock state drives: equal when the relay is driven as it should be. */
      relay: z.strictObject({ level, expected: level }).nullable(),
      /** Its readers all open (null: a door without a reader). */
      readers: z.boolean().nullable(),
    }),
  ),
  service: linkHealth,
  broker: linkHealth,
});
export type HealthFacts = z.infer<typeof healthFactsSchema>;

const replySchema = z.discriminatedUnion('type', [
  /** What happens now (a learn session opened: where to tap, for how long). */
  z.strictObject({ type: z.literal('info'), message: z.string() }),
  /** A card (or a PIN, a token) a learn session was handed: shown in every numbering, not decided. */
  z.strictObject({ type: z.literal('card'), at: z.string(), text: z.string() }),
  /** The daemon's health (the `health` action), before its `done`. */
  z.strictObject({ type: z.literal('health'), health: healthFactsSchema }),
  /** Where a reader firmware transfer stands: bytes the reader confirmed, the delay it asks for between fragments (ms). */
  z.strictObject({
    type: z.literal('progress'),
    phase: z.enum(['sending', 'finishing', 'installing']),
    sent: z.number().int().nonnegative(),
    total: z.number().int().positive(),
    delayMs: z.number().int().nonnegative(),
  }),
  /** The last line of a request that was carried out (`cards`: a learn session's count). */
  z.strictObject({ type: z.literal('done'), message: z.string(), cards: z.number().int().nonnegative().optional() }),
  /** The last line of a request that was refused or failed. */
  z.strictObject({ type: z.literal('error'), error: z.string(), field: z.string().optional() }),
]);

export type ControlReply = z.infer<typeof replySchema>;
export type FinalReply = Extract<ControlReply, { type: 'done' | 'error' }>;

/** One reply line from the daemon, validated; null when it is not one. */
export function parseReply(line: string): ControlReply | null {
  try {
    const parsed = replySchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
