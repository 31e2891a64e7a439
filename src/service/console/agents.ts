import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import type { Rank } from '../apiKeys.js';
import { agentIdFromHostname } from '../fleet/fleetAgents.js';
import { registerAgentEnrolment } from './agentEnrolment.js';
import { auditGapsNotice } from './auditGaps.js';
import { type ConsoleContext, sendHtml, sessionOf, takeFlash } from './context.js';
import { attentionOf, durationText, pendingChangesOf, refusedConfig } from './fleetAttention.js';
import { FleetOverview, type AgentView } from './fleetOverview.js';
import { html, type Html } from './html.js';
import { csrfField, page } from './layout.js';
import type { AgentLive } from './siteFeed.js';
import type { SiteTime } from './siteTime.js';

const age = (seconds: number | null) => (seconds === null ? 'never synced' : durationText(seconds));

const onlineBadge = (online: boolean | null | undefined) =>
  online === null || online === undefined
    ? html`<span class="muted">unknown</span>`
    : online
      ? html`<span class="badge good">online</span>`
      : html`<span class="badge bad">offline</span>`;

/**
 * One agent's row as a REGULAR session (or a service without server.fleet) sees it: availability and health (docs/mqtt.md, "Health").
 */
function agentRow(agent: AgentLive, time: SiteTime): Html {
  const h = agent.health;
  return html`<tr id="agent-${agent.id}"><th scope="row">${agent.id}</th><td data-label="State">${onlineBadge(agent.online)}</td>
<td data-label="Version">${h?.version ?? ''}</td><td data-label="Cache">${h ? `revision ${h.cache.revision ?? 'none'}, ${age(h.cache.age_s)} old` : ''}</td>
<td data-label="Outbox">${h ? html`<span class="${h.outbox_depth > 0 ? 'warn' : ''}">${h.outbox_depth}</span>` : ''}</td>
<td data-label="Readers">${h ? `${h.readers.online} of ${h.readers.total} online` : ''}</td>
<td data-label="Doors">${h ? h.doors.map((d) => d.name).join(', ') : ''}</td><td data-label="Reported">${h ? time.element(h.at) : ''}</td></tr>`;
}

const HEALTH_HEAD = html`<tr><th scope="col">Agent</th><th scope="col">State</th><th scope="col">Version</th><th scope="col">Cache</th><th scope="col">Outbox</th><th scope="col">Readers</th><th scope="col">Doors</th><th scope="col">Reported</th></tr>`;
const FLEET_HEAD = html`<tr><th scope="col">Agent</th><th scope="col">State</th><th scope="col">Version</th><th scope="col">Configuration</th><th scope="col">Last sync</th><th scope="col">Health</th><th scope="col">Pending changes</th><th scope="col">Rollout</th><th scope="col">Needs attention</th></tr>`;
/** The cells after State in a fleet row: what a pending or refused enrolment's one wide cell spans. */
const WIDE = 7;

const list = (items: string[], none = html``): Html => (items.length === 0 ? none : html`<ul class="plain">${items.map((i) => html`<li>${i}</li>`)}</ul>`);

/** What a board reported at enrolment. */
export function factsList(view: AgentView): Html {
  const f = view.enrolment?.facts;
  if (!f) return html`<p class="muted">Its report of its board does not read.</p>`;
  return html`<dl class="facts"><dt>Host name</dt><dd>${f.hostname}</dd><dt>Version</dt><dd>${f.version}</dd><dt>Architecture</dt><dd>${f.arch}</dd>
<dt>Node.js</dt><dd>${f.node}</dd><dt>GPIO chips</dt><dd>${f.gpio_chips.join(', ') || 'none found'}</dd>
<dt>Serial devices</dt><dd>${f.serial_devices.join(', ') || 'none found'}</dd></dl>`;
}

/** The version an agent runs: its health's, else its last report's, else the one it enrolled with. */
export function versionOf(view: AgentView): string | null {
  return view.live?.health?.version ?? view.report?.report.version ?? view.enrolment?.facts?.version ?? null;
}

/** "v2 applied, v3 current", "v3 (current)", with the version it refused, if newer than the one it runs. */
function configCell(view: AgentView): Html {
  if (view.enrolment === null) return html`<span class="muted">not enrolled</span>`;
  const applied = view.report?.report.config?.applied ?? null;
  const { current } = view.config;
  const refused = refusedConfig(view);
  const text =
    current === null && applied === null
      ? 'none yet'
      : applied !== null && applied === current
        ? `v${applied} (current)`
        : `${applied === null ? 'none' : `v${applied}`} applied, ${current === null ? 'none' : `v${current}`} current`;
  return html`${text}${refused ? html` <span class="badge bad">refused v${refused.version}</span>` : ''}`;
}

function syncCell(view: AgentView, time: SiteTime): Html {
  const h = view.live?.health;
  if (h) return html`<span title="revision ${h.cache.revision ?? 'none'}">${h.cache.age_s === null ? 'never synced' : `${age(h.cache.age_s)} ago`}</span>`;
  if (view.report) return html`reported ${time.element(view.report.at)}`;
  return html`<span class="muted">never</span>`;
}

function healthCell(view: AgentView): Html {
  const h = view.live?.health;
  if (!h) return html`<span class="muted">no health message</span>`;
  return html`${h.readers.online} of ${h.readers.total} readers online, <span class="${h.outbox_depth > 0 ? 'warn' : ''}">outbox ${h.outbox_depth}</span>`;
}

function rolloutCell(view: AgentView): Html {
  if (!view.rollout) return html``;
  const { rollout, agent } = view.rollout;
  return html`<a href="/console/rollouts">${rollout.version}</a>: ${agent.stage}, ${agent.state.replace('_', ' ')}`;
}

/** A board waiting for an operator: what it reported, Adopt (the agent id proposed) and Refuse (a reason). */
function pendingCells(view: AgentView, csrf: string, proposed: string): Html {
  const id = view.enrolment!.id;
  const host = view.name;
  return html`<td data-label="Reported" colspan="${WIDE}">${factsList(view)}
<form method="post" action="/console/agents/enrolments/${id}/adopt" class="inline">${csrfField(csrf)}
<label for="adopt-${id}">Agent id for ${host}</label><input id="adopt-${id}" name="agent_id" value="${proposed}" maxlength="64" size="16">
<button aria-label="Adopt ${host}">Adopt</button></form>
<form method="post" action="/console/agents/enrolments/${id}/refuse" class="inline">${csrfField(csrf)}
<label for="refuse-${id}">Reason for ${host}</label><input id="refuse-${id}" name="reason" maxlength="500" size="24" placeholder="not one of ours">
<button class="danger" aria-label="Refuse ${host}" data-confirm="Refuse ${host}? The board prints the reason and writes nothing.">Refuse</button></form></td>`;
}

/** One agent's row as ADMIN and SUPER see it: the fleet at a glance (docs/console/README.md, "Agents"). */
function fleetRow(view: AgentView, options: { now: number; time: SiteTime; csrf: string; proposed?: string }): Html {
  const { time } = options;
  const e = view.enrolment;
  const host = e?.facts?.hostname;
  if (e && e.state !== 'adopted') {
    const decided =
      e.state === 'refused'
        ? html`refused ${e.decidedAt === null ? '' : time.element(e.decidedAt)}${e.decidedBy ? ` by ${e.decidedBy}` : ''}: ${e.reason ?? ''}`
        : '';
    return html`<tr id="${view.rowId}"><th scope="row">${view.name}<br><span class="muted">enrolled ${time.element(e.enrolledAt)}</span></th>
<td data-label="State">${e.state === 'pending' ? html`<span class="badge warn">pending</span>` : html`<span class="badge bad">refused</span>`}</td>${
      e.state === 'pending'
        ? pendingCells(view, options.csrf, options.proposed ?? agentIdFromHostname(view.name))
        : html`<td data-label="Decision" colspan="${WIDE}">${decided}</td>`
    }</tr>`;
  }
  const version = versionOf(view);
  const name = e
    ? html`<a href="/console/agents/${view.agentId}">${view.name}</a>${host && host !== view.name ? html`<br><span class="muted">${host}</span>` : ''}`
    : view.name;
  return html`<tr id="${view.rowId}"><th scope="row">${name}</th>
<td data-label="State">${e ? html`<span class="badge good">adopted</span>` : html`<span class="muted">not enrolled</span>`} ${onlineBadge(view.live?.online)}</td>
<td data-label="Version">${version === null ? '' : view.rollout ? html`<a href="/console/rollouts" title="a rollout is under way">${version}</a>` : version}</td>
<td data-label="Configuration">${configCell(view)}</td><td data-label="Last sync">${syncCell(view, time)}</td><td data-label="Health">${healthCell(view)}</td>
<td data-label="Pending changes">${list(pendingChangesOf(view))}</td><td data-label="Rollout">${rolloutCell(view)}</td>
<td data-label="Needs attention">${list(attentionOf(view, options.now))}</td></tr>`;
}

/** `base`, or base-2, base-3, ...: the first id no agent has (as the service makes the id it chooses unique). */
function unique(base: string, taken: Set<string>): string {
  for (let n = 1; ; n++) {
    const id = n === 1 ? base : `${base}-${n}`;
    if (!taken.has(id)) return id;
  }
}

/** Whether the session sees the fleet: ADMIN and up, on a service with server.fleet. */
const seesFleet = (ctx: ConsoleContext, rank: Rank) => ctx.api.fleet !== undefined && rank !== 'REGULAR';

/** The live stream's row of an agent (live.ts): the fleet's view for ADMIN and up, its health otherwise. */
export async function liveAgentRow(
  ctx: ConsoleContext,
  session: { rank: Rank; csrf: string },
  agentId: string,
  attentionOnly: boolean,
): Promise<{ html: Html; shown: boolean } | null> {
  if (!seesFleet(ctx, session.rank)) {
    const agent = ctx.feed?.agentList().find((a) => a.id === agentId);
    return agent ? { html: agentRow(agent, ctx.time), shown: true } : null;
  }
  const view = await new FleetOverview(ctx.api.db, ctx.feed).one(agentId);
  if (!view) return null;
  const now = ctx.api.clock.wallNow();
  return { html: fleetRow(view, { now, time: ctx.time, csrf: session.csrf }), shown: !attentionOnly || attentionOf(view, now).length > 0 };
}

export function registerAgents(app: FastifyInstance, ctx: ConsoleContext): void {
  registerAgentEnrolment(app, ctx);

  app.get('/console/agents', async (request, reply) => {
    const s = sessionOf(request);
    const notices = html`${ctx.feed ? '' : html`<p class="flash error">The service has no mqtt section: it hears no agent.</p>`}${await auditGapsNotice(ctx)}`;
    if (!seesFleet(ctx, s.rank)) {
      const agents = ctx.feed?.agentList() ?? [];
      const body = html`${notices}${agents.length === 0 ? html`<p>No agent has reported since the service started.</p>` : ''}
<table><thead>${HEALTH_HEAD}</thead><tbody id="agents">${agents.map((a) => agentRow(a, ctx.time))}</tbody></table>`;
      return sendHtml(
        reply,
        page({ name: 'agents', title: 'Agents', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), live: true, body }),
      );
    }
    const attentionOnly = z.object({ attention: z.literal('1').optional() }).parse(request.query).attention === '1';
    const now = ctx.api.clock.wallNow();
    const views = await new FleetOverview(ctx.api.db, ctx.feed).all();
    const needing = views.filter((v) => attentionOf(v, now).length > 0);
    const shown = attentionOnly ? needing : views;
    const taken = new Set(views.flatMap((v) => (v.agentId === null ? [] : [v.agentId])));
    const current = (on: boolean) => (on ? html` aria-current="page"` : '');
    const body = html`${notices}<form method="post" action="/console/agents/enrol-code" class="inline">${csrfField(s.csrf)}<button>New enrolment code</button></form>
<nav aria-label="Filter agents"><p><a href="/console/agents?attention=1"${current(attentionOnly)}>Needs attention (${needing.length})</a> · <a href="/console/agents"${current(!attentionOnly)}>All agents (${views.length})</a></p></nav>
${shown.length === 0 ? html`<p>${attentionOnly ? 'No agent needs attention.' : 'No agent is enrolled, and none has reported since the service started.'}</p>` : ''}
<table class="fleet"><thead>${FLEET_HEAD}</thead><tbody id="agents">${shown.map((v) => {
      const proposed = v.enrolment?.state === 'pending' ? unique(agentIdFromHostname(v.name), taken) : undefined;
      if (proposed !== undefined) taken.add(proposed);
      return fleetRow(v, { now, time: ctx.time, csrf: s.csrf, ...(proposed === undefined ? {} : { proposed }) });
    })}</tbody></table>`;
    const title = needing.length > 0 ? `Agents: ${needing.length} need${needing.length === 1 ? 's' : ''} attention` : 'Agents';
    return sendHtml(
      reply,
      page({
        name: 'agents',
        title,
        who: s.who,
        rank: s.rank,
        csrf: s.csrf,
        banner: s.banner,
        flash: takeFlash(request),
        live: true,
        ...(attentionOnly ? { liveFilter: 'attention=1' } : {}),
        body,
      }),
    );
  });
}
