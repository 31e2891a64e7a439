import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import {
  webhookCreatedSchema,
  webhookDeletedSchema,
  webhookDeliveriesSchema,
  webhookDeliverySchema,
  webhookSchema,
  webhooksSchema,
  type WebhookAnswer,
  type WebhookDeliveryAnswer,
} from '../../api/webhooks.js';
import { callerOf } from '../keyCheck.js';
import { documented } from '../openapi/routeDoc.js';
import { BadRequest, intParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { DEFAULT_WEBHOOK_OPTIONS } from './webhookDispatcher.js';
import { webhookParams } from './webhookParams.js';
import { newWebhookSecret } from './webhookSignature.js';
import { WebhookStore, type Attempt, type Delivery, type Webhook } from './webhookStore.js';
import { definedOnly } from '../../core/objects.js';

const id = (what: string) =>
  z
    .string()
    .regex(/^[1-9]\d{0,14}$/, `must be a ${what} id: 1, 2, ...`)
    .transform(Number);
const webhookPath = z.object({ webhook_id: id('webhook').describe('the subscription') });
const deliveryPath = z.object({ webhook_id: id('webhook').describe('the subscription'), delivery_id: id('delivery').describe('the delivery') });
const deliveriesParams = z.object({
  state: z.enum(['pending', 'delivered', 'failed']).optional().describe('only the deliveries in this state'),
  before: intParam.pipe(z.number().int().min(1)).optional().describe("only deliveries older than this one (the last page's next_before)"),
  limit: intParam.pipe(z.number().int().min(1, 'must be 1 to 200').max(200, 'must be 1 to 200')).optional().describe('at most this many; default 50'),
});

const iso = (ms: number) => new Date(ms).toISOString();
const webhookAnswer = (w: Webhook): WebhookAnswer => ({
  webhook_id: w.webhookId,
  url: w.url,
  types: w.types,
  description: w.description,
  enabled: w.enabled,
  created_at: iso(w.createdAt),
  created_by: w.createdBy,
});
const deliveryAnswer = (d: Delivery & { attemptLog: Attempt[] }): WebhookDeliveryAnswer => ({
  delivery_id: d.deliveryId,
  event_id: d.eventId,
  agent: d.agent,
  type: d.type,
  state: d.state,
  attempts: d.attempts,
  next_at: d.state === 'pending' ? iso(d.nextAt) : null,
  created_at: iso(d.createdAt),
  delivered_at: d.deliveredAt === null ? null : iso(d.deliveredAt),
  attempt_log: d.attemptLog.map((a) => ({ attempt: a.attempt, at: iso(a.at), status: a.status, error: a.error, duration_ms: a.durationMs })),
});
/** A URL for the log: its origin only (a path or query may carry a receiver's own token). */
const originOf = (url: string) => new URL(url).origin;

/**
 * Webhook subscriptions and their delivery logs (docs/audit.md, "Webhooks"), ADMIN: make one (its secret answered
 * this once), list, read, change and delete them; read a subscription's deliveries with their attempts, and send
 * a delivered or failed one again. The deliveries themselves are the leading process's (webhookDispatcher.ts).
 */
export function registerWebhookRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const store = new WebhookStore(ctx.db);
  const params = webhookParams(ctx.webhooks ?? DEFAULT_WEBHOOK_OPTIONS);
  const found = async (webhookId: number) => {
    const hook = await store.get(webhookId);
    if (!hook) throw new BadRequest(`no webhook ${webhookId}`, 404);
    return hook;
  };

  app.post(
    '/webhooks',
    documented({
      summary: 'Subscribes a receiver to event types: each such event is POSTed to it, signed with its secret.',
      description:
        'The secret is answered here, once, and never again (give one, or one is made). A subscription receives the events the service ' +
        'stores from its creation on. Deliveries and their signature: docs/audit.md, "Webhooks".',
      tag: 'Webhooks',
      key: 'ADMIN',
      params: params.create,
      answer: webhookCreatedSchema,
      answerStatus: 201,
    }),
    async (request, reply) => {
      ctx.requireRank(request, 'ADMIN');
      const p = parseParams(params.create, request.query, request.body);
      const secret = p.secret ?? newWebhookSecret();
      const made = await store.create({
        url: p.url,
        types: p.types,
        secret,
        description: p.description ?? '',
        enabled: true,
        createdAt: ctx.clock.wallNow(),
        createdBy: callerOf(request),
      });
      ctx.logger.info({ webhook: made.webhookId, receiver: originOf(made.url), types: made.types }, 'webhook subscribed');
      reply.code(201);
      return Object.assign(webhookAnswer(made), { secret });
    },
  );

  app.get(
    '/webhooks',
    documented({ summary: 'Every webhook subscription (never its secret).', tag: 'Webhooks', key: 'ADMIN', answer: webhooksSchema }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      return { webhooks: (await store.list()).map(webhookAnswer) };
    },
  );

  app.get(
    '/webhooks/:webhook_id',
    documented({
      summary: 'One webhook subscription (never its secret).',
      tag: 'Webhooks',
      key: 'ADMIN',
      pathParams: webhookPath,
      answer: webhookSchema,
      statuses: { 404: 'No such webhook.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      const { webhook_id: webhookId } = parseParams(webhookPath, request.params, undefined);
      return webhookAnswer(await found(webhookId));
    },
  );

  app.patch(
    '/webhooks/:webhook_id',
    documented({
      summary: 'Changes a subscription: its URL, types, description, secret, or whether it is enabled.',
      description: 'A new secret signs the deliveries sent from then on. Disabled, its deliveries wait; enabled again, they are sent.',
      tag: 'Webhooks',
      key: 'ADMIN',
      pathParams: webhookPath,
      params: params.change,
      answer: webhookSchema,
      statuses: { 404: 'No such webhook.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      const { webhook_id: webhookId } = parseParams(webhookPath, request.params, undefined);
      const p = parseParams(params.change, request.query, request.body);
      const change = definedOnly(p) as Parameters<WebhookStore['update']>[1];
      if (!(await store.update(webhookId, change))) throw new BadRequest(`no webhook ${webhookId}`, 404);
      ctx.logger.info({ webhook: webhookId, changed: Object.keys(change) }, 'webhook changed');
      return webhookAnswer(await found(webhookId));
    },
  );

  app.delete(
    '/webhooks/:webhook_id',
    documented({
      summary: 'Deletes a subscription, with its deliveries and their log.',
      tag: 'Webhooks',
      key: 'ADMIN',
      pathParams: webhookPath,
      answer: webhookDeletedSchema,
      statuses: { 404: 'No such webhook.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      const { webhook_id: webhookId } = parseParams(webhookPath, request.params, undefined);
      if (!(await store.delete(webhookId))) throw new BadRequest(`no webhook ${webhookId}`, 404);
      ctx.logger.info({ webhook: webhookId }, 'webhook deleted');
      return { success: `webhook ${webhookId} deleted` };
    },
  );

  app.get(
    '/webhooks/:webhook_id/deliveries',
    documented({
      summary: "A subscription's deliveries, the newest first, each with its attempts (time, status, error, time taken).",
      tag: 'Webhooks',
      key: 'ADMIN',
      pathParams: webhookPath,
      params: deliveriesParams,
      answer: webhookDeliveriesSchema,
      statuses: { 404: 'No such webhook.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      const { webhook_id: webhookId } = parseParams(webhookPath, request.params, undefined);
      const p = parseParams(deliveriesParams, request.query, request.body);
      await found(webhookId);
      const limit = p.limit ?? 50;
      const page = await store.deliveries(webhookId, { limit: limit + 1, ...(p.before ? { before: p.before } : {}), ...(p.state ? { state: p.state } : {}) });
      const shown = page.slice(0, limit);
      return { deliveries: shown.map(deliveryAnswer), next_before: page.length > limit ? shown.at(-1)!.deliveryId : null };
    },
  );

  app.post(
    '/webhooks/:webhook_id/deliveries/:delivery_id/replay',
    documented({
      summary: 'Sends a delivered or failed delivery again: pending now, its earlier attempts kept.',
      tag: 'Webhooks',
      key: 'ADMIN',
      pathParams: deliveryPath,
      answer: webhookDeliverySchema,
      statuses: { 404: 'No such webhook or delivery.', 409: 'It is pending already.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      const { webhook_id: webhookId, delivery_id: deliveryId } = parseParams(deliveryPath, request.params, undefined);
      await found(webhookId);
      const delivery = await store.delivery(webhookId, deliveryId);
      if (!delivery) throw new BadRequest(`webhook ${webhookId} has no delivery ${deliveryId}`, 404);
      if (!(await store.replay(webhookId, deliveryId, ctx.clock.wallNow())))
        throw new BadRequest(`delivery ${deliveryId} is pending already: it is sent when due`, 409);
      ctx.logger.info({ webhook: webhookId, delivery: deliveryId }, 'webhook delivery replayed');
      return deliveryAnswer((await store.delivery(webhookId, deliveryId))!);
    },
  );
}
