import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { enrolCodeAnswerSchema } from '../../api/fleet.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf } from './context.js';
import { answerText } from './delegation.js';
import { html } from './html.js';
import { page } from './layout.js';

const enrolmentPath = z.object({ enrolment_id: z.uuid('must be an enrolment id') });
const adoptBody = z.object({ agent_id: z.string().max(200).optional() });
const refuseBody = z.object({ reason: z.string().max(2000).optional() });

/**
 * The Agents page's enrolment actions (docs/fleet.md, "Enrolment"), each the API's own route with the session's
 * rank: a new enrolment code (its command shown once, never kept), adopting a pending board, refusing one.
 */
export function registerAgentEnrolment(app: FastifyInstance, ctx: ConsoleContext): void {
  app.post('/console/agents/enrol-code', async (request, reply) => {
    const s = sessionOf(request);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', '/fleet/enrol-codes', {}, s.who);
    if (answer.status !== 200) return redirectWithFlash(request, reply, '/console/agents', answerText(answer, s.rank));
    const made = enrolCodeAnswerSchema.parse(answer.body);
    // Shown in this answer only (no redirect, no message kept in the session): the service keeps a digest of the code.
    const body = html`<p>Type this line on the new board, as root. It is shown only now: the service keeps only a digest of the code.</p>
<p><label for="enrol-command">Command</label><br><input id="enrol-command" class="command" readonly value="${made.command}" size="100">
<button type="button" data-copy="enrol-command">Copy</button> <span id="enrol-command-copied" role="status"></span></p>
<p>The code works once, until ${ctx.time.element(made.expires_at)}. The board then waits for you to adopt it on the Agents page.</p>
<p><a href="/console/agents">Back to the agents</a></p>`;
    return sendHtml(reply, page({ name: 'agents', title: 'New enrolment code', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, body }));
  });

  app.post('/console/agents/enrolments/:enrolment_id/adopt', async (request, reply) => {
    const s = sessionOf(request);
    const { enrolment_id: id } = enrolmentPath.parse(request.params);
    const agentId = (adoptBody.parse(request.body).agent_id ?? '').trim();
    // An empty field: the service's own choice (the host name made an agent id, made unique).
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', `/fleet/agents/${id}/adopt`, agentId === '' ? {} : { agent_id: agentId }, s.who);
    return redirectWithFlash(request, reply, '/console/agents', answerText(answer, s.rank));
  });

  app.post('/console/agents/enrolments/:enrolment_id/refuse', async (request, reply) => {
    const s = sessionOf(request);
    const { enrolment_id: id } = enrolmentPath.parse(request.params);
    const reason = (refuseBody.parse(request.body).reason ?? '').trim();
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', `/fleet/agents/${id}/refuse`, reason === '' ? {} : { reason }, s.who);
    return redirectWithFlash(request, reply, '/console/agents', answerText(answer, s.rank));
  });
}
