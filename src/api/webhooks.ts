import * as z from 'zod';

/**
 * The service's webhook answers (docs/audit.md, "Webhooks"; docs/reference-service.md): subscriptions, and each
 * one's deliveries with their attempts. The secret is in the creation's answer only.
 */

/** A subscription as listed: never its secret. */
export const webhookSchema = z.object({
  webhook_id: z.number().int(),
  url: z.string(),
  /** Event types, or ["*"]: every type. */
  types: z.array(z.string()),
  description: z.string(),
  enabled: z.boolean(),
  created_at: z.string(),
  created_by: z.string(),
});
export type WebhookAnswer = z.output<typeof webhookSchema>;

/** POST /webhooks: the subscription made, with its secret (shown this once). */
export const webhookCreatedSchema = webhookSchema.extend({
  secret: z.string().describe('the HMAC-SHA256 key of its signatures: shown this once, never again'),
});

/** GET /webhooks. */
export const webhooksSchema = z.object({ webhooks: z.array(webhookSchema) });

/** One try to deliver. */
const webhookAttemptSchema = z.object({
  attempt: z.number().int(),
  at: z.string(),
  /** The receiver's HTTP status; null: no answer (see error). */
  status: z.number().int().nullable(),
  /** What went wrong, in words (a refused address, a timeout, a status that is not 2xx); null when delivered. */
  error: z.string().nullable(),
  duration_ms: z.number().int(),
});

/** One event owed to one subscription. */
export const webhookDeliverySchema = z.object({
  delivery_id: z.number().int(),
  event_id: z.number().int(),
  agent: z.string(),
  type: z.string(),
  state: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  /** When it is tried next (pending); null otherwise. */
  next_at: z.string().nullable(),
  created_at: z.string(),
  delivered_at: z.string().nullable(),
  attempt_log: z.array(webhookAttemptSchema),
});
export type WebhookDeliveryAnswer = z.output<typeof webhookDeliverySchema>;

/** GET /webhooks/{id}/deliveries: newest first, a page at a time. */
export const webhookDeliveriesSchema = z.object({
  deliveries: z.array(webhookDeliverySchema),
  /** Ask again with before=next_before for the next (older) page; null: no more. */
  next_before: z.number().int().nullable(),
});

/** DELETE /webhooks/{id}. */
export const webhookDeletedSchema = z.object({ success: z.string() });
