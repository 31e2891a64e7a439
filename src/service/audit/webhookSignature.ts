import { createHmac, randomBytes } from 'node:crypto';

/**
 * A webhook delivery's signature (docs/audit.md, "Webhooks"): `v1=` and the hex HMAC-SHA256, keyed with the
 * subscription's secret, of the Unix timestamp in seconds, a dot and the body's bytes.
 */
function webhookSignature(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** A secret made for a subscription that was given none: 32 random bytes, base64url (43 characters). */
export function newWebhookSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** The request headers of a delivery (names as documented; HTTP takes them case-blind). */
export function deliveryHeaders(deliveryId: number, secret: string, timestamp: number, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'door-agent-webhooks',
    'door-agent-webhook-id': String(deliveryId),
    'door-agent-webhook-timestamp': String(timestamp),
    'door-agent-webhook-signature': webhookSignature(secret, timestamp, body),
  };
}
