import * as z from 'zod';
import { parseRetained, retainedPayload, type RetainedMessage, type RetainedRefusal } from './retainedMessages.js';

/**
 * `P/guest-link-index`, retained: `{"ids":["12","15",...]}`, the magic_link_ids of every live guest link, sent
 * by the service on every connect, daily, and whenever a link is created or revoked (after that link's own
 * message). Signed like every retained message (retainedMessages.ts) over "guest-link-index". In signed mode a
 * door drops the links it received over MQTT that a fresh, valid index no longer lists: the reconcile path
 * for a revocation it missed (any broker client can clear a retained tombstone, so its absence proves nothing).
 */
const GUEST_LINK_INDEX_CONTEXT = 'guest-link-index';

/** A few bytes per id: room for 100,000 links. */
const MAX_GUEST_LINK_INDEX_BYTES = 1024 * 1024;

export const guestLinkIndexSchema = z.object({
  ids: z.array(z.union([z.string().min(1).max(128), z.number().int()]).transform(String)).max(100_000),
});
export type GuestLinkIndex = z.output<typeof guestLinkIndexSchema>;

export function guestLinkIndexTopic(prefix: string): string {
  return `${prefix}/guest-link-index`;
}

export function guestLinkIndexPayload(ids: readonly string[], secret: string | null, issuedAt: number): string {
  return retainedPayload(GUEST_LINK_INDEX_CONTEXT, { ids: [...ids] }, secret, issuedAt);
}

export function parseGuestLinkIndex(payload: Buffer, secret: string | null): RetainedMessage<GuestLinkIndex> | RetainedRefusal {
  return parseRetained(GUEST_LINK_INDEX_CONTEXT, payload, guestLinkIndexSchema, secret, MAX_GUEST_LINK_INDEX_BYTES);
}
