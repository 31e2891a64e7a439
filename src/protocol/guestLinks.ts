import * as z from 'zod';
import { guestLinkSchema, type GuestLink } from '../api/shapes.js';
import { problemsInOneLine } from '../util/issues.js';
import { openSignedObject, retainedPayload } from './retainedMessages.js';

/**
 * Messages on `P/guest-links/<magic_link_id>` (retained). A link is the guest link as POST /magiclinkadmin
 * created it; a revocation is an empty payload or a tombstone `{"magic_link_id", "revoked": true}`. When the
 * doors require signed commands (mqtt.commandSecretFile), every message must carry `issued_at` (unix seconds)
 * and `signature`: hex HMAC-SHA256, with the command secret, over "guest-link\n" followed by the canonical
 * JSON of the message without `signature` (keys sorted at every level, no white space). An empty payload
 * cannot be signed and is then ignored.
 */

/** At most this many bytes per message, in any mode: a link with a few cards and addresses is far smaller. */
const MAX_GUEST_LINK_BYTES = 16 * 1024;

export type GuestLinkMessage = { kind: 'link'; link: GuestLink; issuedAt: number | null } | { kind: 'revoke'; issuedAt: number | null };

export interface GuestLinkRefusal {
  refused: string;
}

const tombstoneSchema = z.object({ magic_link_id: z.union([z.string(), z.number()]).transform(String), revoked: z.literal(true) });

const CONTEXT = 'guest-link';

/** The message to publish for `body` (a link, or a tombstone), signed when a secret is given. */
export function guestLinkPayload(body: Record<string, unknown>, secret: string | null, issuedAt: number): string {
  return retainedPayload(CONTEXT, body, secret, issuedAt);
}

/** A signed revocation (with a secret), else the empty payload that clears the retained link. */
export function guestLinkRevocationPayload(id: string, secret: string | null, issuedAt: number): string {
  return secret === null ? '' : guestLinkPayload({ magic_link_id: id, revoked: true }, secret, issuedAt);
}

/** Parses, validates and (with a secret) authenticates a message of `P/guest-links/<topicId>`. */
export function parseGuestLinkMessage(topicId: string, payload: Buffer, secret: string | null): GuestLinkMessage | GuestLinkRefusal {
  if (payload.length > MAX_GUEST_LINK_BYTES) return { refused: `${payload.length} bytes, more than ${MAX_GUEST_LINK_BYTES}` };
  if (payload.length === 0) {
    return secret === null ? { kind: 'revoke', issuedAt: null } : { refused: 'an unsigned (empty) revocation; revocations must be signed here' };
  }
  const opened = openSignedObject(CONTEXT, payload, secret);
  if ('refused' in opened) return opened;
  const { data, issuedAt } = opened;
  const tombstone = tombstoneSchema.safeParse(data);
  if (tombstone.success) {
    if (tombstone.data.magic_link_id !== topicId) return { refused: 'magic_link_id does not match its topic' };
    return { kind: 'revoke', issuedAt };
  }
  const parsed = guestLinkSchema.safeParse(data);
  if (!parsed.success) return { refused: problemsInOneLine(parsed.error.issues) };
  if (parsed.data.magic_link_id !== topicId) return { refused: 'magic_link_id does not match its topic' };
  return { kind: 'link', link: parsed.data, issuedAt };
}

export function isRefusal(value: GuestLinkMessage | GuestLinkRefusal): value is GuestLinkRefusal {
  return 'refused' in value;
}
