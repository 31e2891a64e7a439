import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { FleetAgents } from '../fleet/fleetAgents.js';
import { Releases } from '../fleet/releases.js';
import { Rollouts, type Rollout } from '../fleet/rollouts.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf, takeFlash } from './context.js';
import { answerText } from './delegation.js';
import { FleetOverview } from './fleetOverview.js';
import { html, type Html } from './html.js';
import { csrfField, page } from './layout.js';

const startBody = z.object({ version: z.string().max(100), canary: z.string().max(100), share_percent: z.coerce.number().int() });
const stopBody = z.object({ reason: z.string().max(2000) });
const rolloutPath = z.object({ rollout_id: z.coerce.number().int().positive() });

const sizeText = (bytes: number) => (bytes < 1 << 20 ? `${Math.ceil(bytes / 1024)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`);
const stageWords = (r: Rollout) => (r.stage === 'stopped' ? `stopped: ${r.stoppedReason ?? ''}` : r.stage === 'done' ? 'done' : `at its ${r.stage} stage`);

/**
 * The Rollouts page (docs/console/README.md, "Rollouts"), ADMIN and up: the release bundles stored, a form to
 * start a rollout, the one under way with where each agent stands and Stop, and the rollouts before it. Starting
 * and stopping are the API's own routes (POST /fleet/rollouts, POST /fleet/rollouts/{id}/stop).
 */
export function registerRollouts(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/console/rollouts', async (request, reply) => {
    ctx.api.requireRank(request, 'ADMIN');
    const s = sessionOf(request);
    const show = (body: Html) =>
      sendHtml(reply, page({ name: 'rollouts', title: 'Rollouts', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), body }));
    if (ctx.api.fleet === undefined) {
      return show(html`<p class="flash error">This service has no server.fleet section: releases and rollouts are off (docs/fleet.md).</p>`);
    }
    const [releases, rollouts, active, enrolments] = await Promise.all([
      new Releases(ctx.api.db).list(),
      new Rollouts(ctx.api.db).list(),
      new FleetOverview(ctx.api.db, ctx.feed).activeRollout(),
      new FleetAgents(ctx.api.db).list(),
    ]);
    const adopted = enrolments.flatMap((e) => (e.state === 'adopted' && e.agent_id !== null ? [e.agent_id] : [])).sort();
    const versions = [...new Set(releases.map((r) => r.manifest.version))];
    const releaseTable =
      releases.length === 0
        ? html`<p>No release stored yet: <code>door-agent service release add BUNDLE</code> on the service's machine, or <code>PUT /fleet/releases/{version}/{arch}</code> (docs/fleet.md, "At the service").</p>`
        : html`<table><thead><tr><th scope="col">Version</th><th scope="col">Architecture</th><th scope="col">Size</th><th scope="col">Uploaded</th><th scope="col">By</th></tr></thead><tbody>${releases.map(
            (
              r,
            ) => html`<tr><td data-label="Version">${r.manifest.version}</td><td data-label="Architecture">${r.manifest.arch}</td><td data-label="Size">${sizeText(r.manifest.size)}</td>
<td data-label="Uploaded">${ctx.time.element(r.uploadedAt)}</td><td data-label="By">${r.uploadedBy}</td></tr>`,
          )}</tbody></table>`;
    const startForm =
      active !== null
        ? html`<p>One rollout at a time: stop the one under way, or let it end, to start another.</p>`
        : versions.length === 0 || adopted.length === 0
          ? html`<p>A rollout needs a release and an adopted agent.</p>`
          : html`<form method="post" action="/console/rollouts" class="card">${csrfField(s.csrf)}
<p><label for="rollout-version">Version</label> <select id="rollout-version" name="version">${versions.map((v) => html`<option>${v}</option>`)}</select>
<label for="rollout-canary">Canary</label> <select id="rollout-canary" name="canary">${adopted.map((a) => html`<option>${a}</option>`)}</select>
<label for="rollout-share">Share of the others next (%)</label> <input id="rollout-share" name="share_percent" type="number" min="1" max="99" value="25" size="4">
<button>Start rollout</button></p>
<p class="muted">The canary goes first, alone; then the share; then all. Each stage starts once every agent of the one before reported healthy; the first agent that rolls back or fails stops the rollout.</p></form>`;
    const activeSection =
      active === null
        ? html`<p>None.</p>`
        : html`<p id="rollout-stage">Rollout ${active.rolloutId}: version ${active.version}, ${stageWords(active)}. Canary ${active.canary}, then ${active.sharePercent} % of the others. Started ${ctx.time.element(
            active.createdAt,
          )} by ${active.createdBy}.</p>
<table><thead><tr><th scope="col">Agent</th><th scope="col">Stage</th><th scope="col">State</th><th scope="col">Detail</th><th scope="col">Updated</th></tr></thead><tbody>${active.agents.map(
            (
              a,
            ) => html`<tr id="rollout-agent-${a.agentId}"><th scope="row"><a href="/console/agents/${a.agentId}">${a.agentId}</a></th><td data-label="Stage">${a.stage}</td>
<td data-label="State">${a.state.replace('_', ' ')}</td><td data-label="Detail">${a.detail}</td><td data-label="Updated">${ctx.time.element(a.updatedAt)}</td></tr>`,
          )}</tbody></table>
<form method="post" action="/console/rollouts/${active.rolloutId}/stop" class="inline">${csrfField(s.csrf)}<label for="stop-reason">Reason</label>
<input id="stop-reason" name="reason" required maxlength="500" size="40"><button class="danger" data-confirm="Stop rollout ${active.rolloutId}? Nothing more is offered.">Stop</button></form>`;
    const past = rollouts.filter((r) => r.rolloutId !== active?.rolloutId);
    const pastTable =
      past.length === 0
        ? html`<p>None.</p>`
        : html`<table><thead><tr><th scope="col">Rollout</th><th scope="col">Version</th><th scope="col">How it ended</th><th scope="col">Started</th><th scope="col">By</th></tr></thead><tbody>${past.map(
            (
              r,
            ) => html`<tr id="rollout-${r.rolloutId}"><td data-label="Rollout">${r.rolloutId}</td><td data-label="Version">${r.version}</td><td data-label="How it ended">${stageWords(r)}</td>
<td data-label="Started">${ctx.time.element(r.createdAt)}</td><td data-label="By">${r.createdBy}</td></tr>`,
          )}</tbody></table>`;
    return show(html`<section aria-labelledby="active-h"><h2 id="active-h">Under way</h2>${activeSection}</section>
<section aria-labelledby="start-h"><h2 id="start-h">Start a rollout</h2>${startForm}</section>
<section aria-labelledby="releases-h"><h2 id="releases-h">Releases</h2>${releaseTable}</section>
<section aria-labelledby="past-h"><h2 id="past-h">Earlier rollouts</h2>${pastTable}</section>`);
  });

  app.post('/console/rollouts', async (request, reply) => {
    const s = sessionOf(request);
    const p = startBody.parse(request.body);
    const answer = await ctx.delegation.call(
      ctx.app,
      s.rank,
      'POST',
      '/fleet/rollouts',
      { version: p.version, canary: p.canary, share_percent: p.share_percent },
      s.who,
    );
    const flash = answerText(answer, s.rank);
    if (answer.status === 200)
      flash.text = `rollout ${String(answer.body.rollout_id)} of version ${String(answer.body.version)} started: ${String(answer.body.canary)} first`;
    return redirectWithFlash(request, reply, '/console/rollouts', flash);
  });

  app.post('/console/rollouts/:rollout_id/stop', async (request, reply) => {
    const s = sessionOf(request);
    const { rollout_id: id } = rolloutPath.parse(request.params);
    const { reason } = stopBody.parse(request.body);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', `/fleet/rollouts/${id}/stop`, { reason: reason.trim() }, s.who);
    const flash = answerText(answer, s.rank);
    if (answer.status === 200) flash.text = `rollout ${id} stopped: nothing more is offered`;
    return redirectWithFlash(request, reply, '/console/rollouts', flash);
  });
}
