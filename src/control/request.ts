import * as z from 'zod';
import { MAX_UNLOCK_SECONDS } from '../core/lockState.js';
import { DoorAgentError } from '../util/errors.js';
import { problemsFromZod } from '../util/issues.js';

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

const ACTIONS = ['unlock', 'lock', 'reader-learn', 'learn-card'] as const;

const requestSchema = z.discriminatedUnion(
  'action',
  [
    z.strictObject({ action: z.literal('unlock'), door: doorName, seconds: unlockSeconds.optional(), user: who }),
    z.strictObject({ action: z.literal('lock'), door: doorName, user: who }),
    z.strictObject({ action: z.literal('reader-learn'), reader: readerName.optional(), seconds: learnSeconds, user: who }),
    z.strictObject({ action: z.literal('learn-card'), reader: readerName.optional(), seconds: learnSeconds, user: who }),
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

const replySchema = z.discriminatedUnion('type', [
  /** What happens now (a learn session opened: where to tap, for how long). */
  z.strictObject({ type: z.literal('info'), message: z.string() }),
  /** A card (or a PIN, a token) a learn session was handed: shown in every numbering, not decided. */
  z.strictObject({ type: z.literal('card'), at: z.string(), text: z.string() }),
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
