import * as z from 'zod';
import { problemsInOneLine } from '../util/issues.js';
import { MAX_JSON_DEPTH, deeperThan } from './jsonDepth.js';
import { canonicalJson, sign, signatureMatches } from './signing.js';
import { withProps } from '../core/objects.js';

/**
 * Retained state messages from the service or an operator (lockdown, holidays): JSON objects which, when the
 * doors require signed commands (mqtt.commandSecretFile), carry `issued_at` (unix seconds) and `signature`: hex
 * HMAC-SHA256 with the command secret over "<context>\n" followed by the canonical JSON of the message without
 * `signature` (keys sorted at every level, no white space). The context names the topic's subject (for example
 * `lockdown agent:lobby-pi`), so a message signed for one door or agent is refused on another's topic.
 * An empty payload clears the retained message: believed only when nothing needs signing.
 */

const MAX_RETAINED_BYTES = 16 * 1024;

export type RetainedMessage<T> = { kind: 'set'; body: T; issuedAt: number | null } | { kind: 'clear'; issuedAt: null };
export interface RetainedRefusal {
  refused: string;
}

const envelopeSchema = z.object({
  issued_at: z.number().int().nonnegative().optional(),
  signature: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits (HMAC-SHA256)')
    .optional(),
});

function signedText(context: string, message: Record<string, unknown>): string {
  const { signature: _ignored, ...rest } = message;
  return `${context}\n${canonicalJson(rest)}`;
}

/** The payload to publish: `body`, with issued_at and signature when a secret is given. */
export function retainedPayload(context: string, body: Record<string, unknown>, secret: string | null, issuedAt: number): string {
  if (secret === null) return JSON.stringify(body);
  const message = withProps(body, { issued_at: issuedAt });
  return JSON.stringify(withProps(message, { signature: sign(secret, signedText(context, message)) }));
}

/** Parses, validates against `schema` and (with a secret) authenticates a retained message. */
export function parseRetained<T>(
  context: string,
  payload: Buffer,
  schema: z.ZodType<T>,
  secret: string | null,
  maxBytes: number = MAX_RETAINED_BYTES,
): RetainedMessage<T> | RetainedRefusal {
  if (payload.length > maxBytes) return { refused: `${payload.length} bytes, more than ${maxBytes}` };
  if (payload.length === 0) {
    return secret === null ? { kind: 'clear', issuedAt: null } : { refused: 'an unsigned (empty) message; it must be signed here' };
  }
  const opened = openSignedObject(context, payload, secret);
  if ('refused' in opened) return opened;
  const { data, issuedAt } = opened;
  const parsed = schema.safeParse(data);
  if (!parsed.success) return { refused: problemsInOneLine(parsed.error.issues) };
  return { kind: 'set', body: parsed.data, issuedAt };
}

/**
 * A non-empty message opened: JSON, an object, its envelope (issued_at, signature) well formed and, with a
 * secret, signed over "<context>\n<canonical JSON>". Shared by guest links and the other retained messages.
 */
export function openSignedObject(
  context: string,
  payload: Buffer,
  secret: string | null,
): { data: Record<string, unknown>; issuedAt: number | null } | RetainedRefusal {
  let data: unknown;
  try {
    data = JSON.parse(payload.toString('utf8'));
  } catch {
    return { refused: 'not JSON' };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { refused: 'not a JSON object' };
  // Before anything recurses into it (the canonical JSON of the signature): a refusal, not a stack overflow.
  if (deeperThan(data)) return { refused: `nested deeper than ${MAX_JSON_DEPTH} levels` };
  const envelope = envelopeSchema.safeParse(data);
  if (!envelope.success) return { refused: problemsInOneLine(envelope.error.issues) };
  const issuedAt = envelope.data.issued_at ?? null;
  if (secret !== null) {
    const { signature } = envelope.data;
    if (signature === undefined || issuedAt === null) return { refused: 'unsigned: issued_at and signature are required here' };
    if (!signatureMatches(secret, signedText(context, data as Record<string, unknown>), signature)) return { refused: 'signature does not match' };
  }
  return { data: data as Record<string, unknown>, issuedAt };
}

export function isRetainedRefusal<T>(value: RetainedMessage<T> | RetainedRefusal): value is RetainedRefusal {
  return 'refused' in value;
}
