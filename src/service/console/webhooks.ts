import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import type { WebhookAnswer, WebhookDeliveryAnswer } from '../../api/webhooks.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf, takeFlash } from './context.js';
import { answerText } from './delegation.js';
import { html, type Html } from './html.js';
import { csrfField, page } from './layout.js';

const createBody = z.object({
  url: z.string().max(2000),
  types: z.string().max(5000),
  description: z.string().max(500).optional(),
  secret: z.string().max(300).optional(),
});
const enabledBody = z.object({ enabled: z.enum(['true', 'false']) });
const webhookPath = z.object({ webhook_id: z.coerce.number().int().positive() });
const deliveryPath = webhookPath.extend({ delivery_id: z.coerce.number().int().positive() });
const logQuery = z.object({
  state: z.enum(['pending', 'delivered', 'failed', '']).optional(),
  before: z.coerce.number().int().positive().optional(),
});

/** The types field as typed: names apart by commas or spaces ("*": every type). */
const typesOf = (text: string) => text.split(/[\s,]+/).filter((t) => t !== '');

/**
 * The Webhooks page (docs/console/README.md, "Webhooks"), ADMIN and up: the subscriptions, a form to add one (its
 * secret shown once, on the answer to the form, never stored in the session), enable, disable and delete (after a
 * confirmation); each one's delivery log with its attempts, and Send again. Every read and change is the API's
 * own route (/webhooks...), called in-process as the session.
 */
export function registerWebhooks(app: FastifyInstance, ctx: ConsoleContext): void {
  const showPage = (reply: Parameters<typeof sendHtml>[0], request: Parameters<typeof sessionOf>[0], title: string, body: Html) => {
    const s = sessionOf(request);
    return sendHtml(reply, page({ name: 'webhooks', title, who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), body }));
  };

  app.get('/console/webhooks', async (request, reply) => {
    ctx.api.requireRank(request, 'ADMIN');
    const s = sessionOf(request);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'GET', '/webhooks', undefined, s.who);
    const hooks = (answer.body.webhooks ?? []) as WebhookAnswer[];
    const list =
      hooks.length === 0
        ? html`<p>None yet.</p>`
        : html`<table><thead><tr><th scope="col">Receiver</th><th scope="col">Event types</th><th scope="col">Description</th><th scope="col">State</th><th scope="col">Actions</th></tr></thead><tbody>${hooks.map(
            (w) => html`<tr id="webhook-${w.webhook_id}"><th scope="row"><a href="/console/webhooks/${w.webhook_id}">${w.url}</a></th>
<td data-label="Event types">${w.types.join(', ')}</td><td data-label="Description">${w.description}</td><td data-label="State">${w.enabled ? 'enabled' : 'disabled'}</td>
<td data-label="Actions"><form method="post" action="/console/webhooks/${w.webhook_id}/enabled" class="inline">${csrfField(s.csrf)}<input type="hidden" name="enabled" value="${String(!w.enabled)}"><button>${w.enabled ? 'Disable' : 'Enable'}</button></form>
<form method="post" action="/console/webhooks/${w.webhook_id}/delete" class="inline">${csrfField(s.csrf)}<button class="danger" data-confirm="Delete the webhook to ${w.url}, with its delivery log?">Delete</button></form></td></tr>`,
          )}</tbody></table>`;
    const form = html`<form method="post" action="/console/webhooks" class="card">${csrfField(s.csrf)}
<p><label for="webhook-url">Receiver URL</label> <input id="webhook-url" name="url" type="url" required size="50" placeholder="https://siem.example.org/door-events"></p>
<p><label for="webhook-types">Event types</label> <input id="webhook-types" name="types" required size="50" value="*" aria-describedby="webhook-types-help">
<span id="webhook-types-help" class="muted">* for every type, or names apart by commas: access_granted, door_forced</span></p>
<p><label for="webhook-description">Description</label> <input id="webhook-description" name="description" maxlength="500" size="40"></p>
<p><label for="webhook-secret">Secret</label> <input id="webhook-secret" name="secret" minlength="32" maxlength="256" size="40" autocomplete="off" aria-describedby="webhook-secret-help">
<span id="webhook-secret-help" class="muted">32 to 256 characters; empty: one is made and shown once</span></p>
<p><button>Add webhook</button></p></form>`;
    return showPage(
      reply,
      request,
      'Webhooks',
      html`<section aria-labelledby="list-h"><h2 id="list-h">Subscriptions</h2>${list}</section>
<section aria-labelledby="add-h"><h2 id="add-h">Add a webhook</h2>${form}<p class="muted">Each delivery is signed with the secret: docs/audit.md, "Webhooks".</p></section>`,
    );
  });

  app.post('/console/webhooks', async (request, reply) => {
    const s = sessionOf(request);
    const p = createBody.parse(request.body);
    const answer = await ctx.delegation.call(
      ctx.app,
      s.rank,
      'POST',
      '/webhooks',
      Object.assign({ url: p.url.trim(), types: typesOf(p.types) }, p.description ? { description: p.description } : {}, p.secret ? { secret: p.secret } : {}),
      s.who,
    );
    if (answer.status !== 201) return redirectWithFlash(request, reply, '/console/webhooks', answerText(answer, s.rank));
    // The secret once, on this answer only: not kept in the session nor shown on any later page.
    const made = answer.body as unknown as WebhookAnswer & { secret: string };
    return showPage(
      reply,
      request,
      'Webhook added',
      html`<p class="flash ok" role="status">Webhook ${made.webhook_id} added: ${made.url}</p>
<p>Its secret, shown this once (the receiver checks each delivery's signature with it):</p>
<p><code id="webhook-secret-once">${made.secret}</code></p>
<p><a href="/console/webhooks">Back to the webhooks</a></p>`,
    );
  });

  app.post('/console/webhooks/:webhook_id/enabled', async (request, reply) => {
    const s = sessionOf(request);
    const { webhook_id: id } = webhookPath.parse(request.params);
    const { enabled } = enabledBody.parse(request.body);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'PATCH', `/webhooks/${id}`, { enabled: enabled === 'true' }, s.who);
    const flash = answerText(answer, s.rank);
    if (answer.status === 200) flash.text = `webhook ${id} ${enabled === 'true' ? 'enabled: its deliveries are sent' : 'disabled: its deliveries wait'}`;
    return redirectWithFlash(request, reply, '/console/webhooks', flash);
  });

  app.post('/console/webhooks/:webhook_id/delete', async (request, reply) => {
    const s = sessionOf(request);
    const { webhook_id: id } = webhookPath.parse(request.params);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'DELETE', `/webhooks/${id}`, undefined, s.who);
    return redirectWithFlash(request, reply, '/console/webhooks', answerText(answer, s.rank));
  });

  app.get('/console/webhooks/:webhook_id', async (request, reply) => {
    ctx.api.requireRank(request, 'ADMIN');
    const s = sessionOf(request);
    const { webhook_id: id } = webhookPath.parse(request.params);
    const q = logQuery.parse(request.query);
    const hook = await ctx.delegation.call(ctx.app, s.rank, 'GET', `/webhooks/${id}`, undefined, s.who);
    if (hook.status !== 200) return showPage(reply, request, 'Webhook', html`<p class="flash error" role="alert">${answerText(hook, s.rank).text}</p>`);
    const query = new URLSearchParams();
    if (q.state) query.set('state', q.state);
    if (q.before) query.set('before', String(q.before));
    const log = await ctx.delegation.call(ctx.app, s.rank, 'GET', `/webhooks/${id}/deliveries?${query.toString()}`, undefined, s.who);
    const deliveries = (log.body.deliveries ?? []) as WebhookDeliveryAnswer[];
    const nextBefore = log.body.next_before as number | null | undefined;
    const w = hook.body as unknown as WebhookAnswer;
    const attempts = (d: WebhookDeliveryAnswer) =>
      d.attempt_log.length === 0
        ? html`none yet`
        : html`<ol>${d.attempt_log.map(
            (a) =>
              html`<li>${ctx.time.element(a.at)}: ${a.status === null ? 'no answer' : `HTTP ${a.status}`}${a.error ? html`, ${a.error}` : ''} (${a.duration_ms} ms)</li>`,
          )}</ol>`;
    const rows = deliveries.map(
      (
        d,
      ) => html`<tr id="delivery-${d.delivery_id}"><th scope="row">${d.delivery_id}</th><td data-label="Event">${d.type} from ${d.agent} (event ${d.event_id})</td>
<td data-label="State">${d.state}${d.state === 'pending' && d.next_at ? html`, next ${ctx.time.element(d.next_at)}` : ''}</td><td data-label="Attempts">${attempts(d)}</td>
<td data-label="Actions">${
        d.state === 'pending'
          ? ''
          : html`<form method="post" action="/console/webhooks/${id}/deliveries/${d.delivery_id}/replay" class="inline">${csrfField(s.csrf)}<button>Send again</button></form>`
      }</td></tr>`,
    );
    const filter = html`<form method="get" action="/console/webhooks/${id}" class="inline"><label for="log-state">Show</label>
<select id="log-state" name="state">${['', 'pending', 'delivered', 'failed'].map((v) => html`<option value="${v}"${v === (q.state ?? '') ? ' selected' : ''}>${v === '' ? 'every delivery' : v}</option>`)}</select><button>Show</button></form>`;
    return showPage(
      reply,
      request,
      `Webhook ${id}`,
      html`<p>${w.url}: ${w.types.join(', ')}${w.description ? html` (${w.description})` : ''}, ${w.enabled ? 'enabled' : 'disabled'}. <a href="/console/webhooks">All webhooks</a></p>
<section aria-labelledby="log-h"><h2 id="log-h">Deliveries, the newest first</h2>${filter}
${
  rows.length === 0
    ? html`<p>None.</p>`
    : html`<table><thead><tr><th scope="col">Delivery</th><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>`
}${nextBefore ? html`<p><a href="/console/webhooks/${id}?before=${nextBefore}${q.state ? `&state=${q.state}` : ''}">Older deliveries</a></p>` : ''}</section>`,
    );
  });

  app.post('/console/webhooks/:webhook_id/deliveries/:delivery_id/replay', async (request, reply) => {
    const s = sessionOf(request);
    const { webhook_id: id, delivery_id: delivery } = deliveryPath.parse(request.params);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', `/webhooks/${id}/deliveries/${delivery}/replay`, undefined, s.who);
    const flash = answerText(answer, s.rank);
    if (answer.status === 200) flash.text = `delivery ${delivery} is sent again`;
    return redirectWithFlash(request, reply, `/console/webhooks/${id}`, flash);
  });
}
