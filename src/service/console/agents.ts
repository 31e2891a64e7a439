import type { FastifyInstance } from 'fastify';
import { type ConsoleContext, sendHtml, sessionOf, takeFlash } from './context.js';
import { html, type Html } from './html.js';
import { page } from './layout.js';
import type { AgentLive } from './siteFeed.js';
import type { SiteTime } from './siteTime.js';

const age = (seconds: number | null) =>
  seconds === null ? 'never synced' : seconds < 120 ? `${seconds} s` : seconds < 7200 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`;

/** One agent's row: availability and its last health message (docs/mqtt.md, "Health"). */
export function agentRow(agent: AgentLive, time: SiteTime): Html {
  const h = agent.health;
  const online =
    agent.online === null
      ? html`<span class="muted">unknown</span>`
      : agent.online
        ? html`<span class="badge good">online</span>`
        : html`<span class="badge bad">offline</span>`;
  return html`<tr id="agent-${agent.id}"><th scope="row">${agent.id}</th><td data-label="State">${online}</td>
<td data-label="Version">${h?.version ?? ''}</td><td data-label="Cache">${h ? `revision ${h.cache.revision ?? 'none'}, ${age(h.cache.age_s)} old` : ''}</td>
<td data-label="Outbox">${h ? html`<span class="${h.outbox_depth > 0 ? 'warn' : ''}">${h.outbox_depth}</span>` : ''}</td>
<td data-label="Readers">${h ? `${h.readers.online} of ${h.readers.total} online` : ''}</td>
<td data-label="Doors">${h ? h.doors.map((d) => d.name).join(', ') : ''}</td><td data-label="Reported">${h ? time.element(h.at) : ''}</td></tr>`;
}

export function registerAgents(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/console/agents', async (request, reply) => {
    const s = sessionOf(request);
    const agents = ctx.feed?.agentList() ?? [];
    const body = html`${ctx.feed ? '' : html`<p class="flash error">The service has no mqtt section: it hears no agent.</p>`}
${agents.length === 0 ? html`<p>No agent has reported since the service started.</p>` : ''}
<table><thead><tr><th scope="col">Agent</th><th scope="col">State</th><th scope="col">Version</th><th scope="col">Cache</th><th scope="col">Outbox</th><th scope="col">Readers</th><th scope="col">Doors</th><th scope="col">Reported</th></tr></thead>
<tbody id="agents">${agents.map((a) => agentRow(a, ctx.time))}</tbody></table>`;
    return sendHtml(reply, page({ name: 'agents', title: 'Agents', who: s.who, rank: s.rank, csrf: s.csrf, flash: takeFlash(request), live: true, body }));
  });
}
