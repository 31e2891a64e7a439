import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { AgentConfigs } from '../fleet/agentConfigs.js';
import { agentParams } from '../fleet/fleetDeps.js';
import { factsList, versionOf } from './agents.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf, takeFlash } from './context.js';
import { answerText } from './delegation.js';
import { attentionOf, durationText, pendingChangesOf } from './fleetAttention.js';
import { FleetOverview, type AgentView } from './fleetOverview.js';
import { html, type Html } from './html.js';
import { csrfField, page, type Flash } from './layout.js';

const saveBody = z.object({ document: z.string().max(1_100_000), note: z.string().max(2000).optional() });
const restoreBody = z.object({ version: z.coerce.number().int().positive('a version number: 1, 2, ...') });

/** What a refused Save keeps: the text typed, its note, and the service's refusal (its first line, then each problem). */
interface Kept {
  document: string;
  note: string;
  refusal: string;
}

const NO_FLEET = html`<p class="flash error">This service has no server.fleet section: enrolment, configuration from the service and rollouts are off (docs/fleet.md).</p>`;

/** A refusal as the page shows it: its first line, then each line after it (a configuration's problems) as a list item. */
function refusalBox(text: string): Html {
  const [first, ...rest] = text.split('\n');
  const problems = rest.map((l) => l.trim()).filter((l) => l !== '');
  return html`<div class="flash error" role="alert" id="config-refused"><p>Not saved: ${first ?? ''}</p>${
    problems.length > 0 ? html`<ul>${problems.map((p) => html`<li>${p}</li>`)}</ul>` : ''
  }</div>`;
}

function reportSection(view: AgentView, ctx: ConsoleContext): Html {
  const r = view.report;
  if (!r) return html`<p>None yet: the agent reports at its first exchange with the service.</p>`;
  const c = r.report.config;
  const u = r.report.update;
  const how = c?.how === 'live' ? 'live' : c?.how === 'restart' ? 'by a restart' : '';
  return html`<dl class="card"><dt>Reported</dt><dd>${ctx.time.element(r.at)}</dd><dt>Program version</dt><dd>${r.report.version}</dd>
<dt>Configuration applied</dt><dd id="report-applied">${c?.applied ? `version ${c.applied}${how ? `, ${how}` : ''}` : 'none'}</dd>
<dt>Configuration refused</dt><dd id="report-refused">${
    c?.refused ? html`version ${c.refused.version}:<ul>${c.refused.problems.map((p) => html`<li>${p}</li>`)}</ul>` : 'none'
  }</dd>
<dt>Update</dt><dd>${u ? `rollout ${u.rollout_id}: ${u.state.replace('_', ' ')}${u.detail ? ` (${u.detail})` : ''}` : 'none'}</dd>
<dt>Tasks</dt><dd>${r.report.tasks?.length ? r.report.tasks.map((t) => `task ${t.task_id}: ${t.state}${t.detail ? ` (${t.detail})` : ''}`).join('; ') : 'none'}</dd></dl>`;
}

function tasksSection(view: AgentView, ctx: ConsoleContext): Html {
  const table =
    view.tasks.length === 0
      ? html`<p>No reader firmware task.</p>`
      : html`<table><thead><tr><th scope="col">Task</th><th scope="col">Readers</th><th scope="col">File</th><th scope="col">State</th><th scope="col">Detail</th><th scope="col">Updated</th></tr></thead><tbody>${view.tasks.map(
          (t) =>
            html`<tr><td data-label="Task">${t.taskId}</td><td data-label="Readers">${t.readers.join(', ')}</td><td data-label="File">${t.file.name} (${t.file.size} bytes)</td>
<td data-label="State">${t.state}</td><td data-label="Detail">${t.detail}</td><td data-label="Updated">${ctx.time.element(t.updatedAt)}</td></tr>`,
        )}</tbody></table>`;
  return html`${table}<p>To send a firmware file to some of its readers, upload the file (<code>POST /fleet/files?name=...</code>), then ask the agent
(<code>POST /fleet/agents/${view.agentId}/reader-firmware</code> with <code>{readers, file_id}</code>): docs/reference-service.md, "Releases, rollouts
and reader firmware", and the API's description at <a href="/openapi.json">/openapi.json</a>.</p>`;
}

/**
 * An adopted agent's page (docs/console/README.md, "An agent's page"): what it is and how it is, its configuration
 * (edit and Save, each version with Restore), its last report, its reader firmware tasks. ADMIN and up.
 */
async function agentPage(ctx: ConsoleContext, request: FastifyRequest, reply: FastifyReply, agentId: string, kept?: Kept): Promise<FastifyReply> {
  const s = sessionOf(request);
  const title = `Agent ${agentId}`;
  if (ctx.api.fleet === undefined)
    return sendHtml(reply, page({ name: 'agents', title, who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, body: NO_FLEET }));
  const view = await new FleetOverview(ctx.api.db, ctx.feed).one(agentId);
  if (view?.enrolment?.state !== 'adopted') {
    return redirectWithFlash(request, reply, '/console/agents', {
      kind: 'error',
      text: `No adopted agent ${agentId}: an agent has a page here once it is enrolled and adopted.`,
    });
  }
  const configs = new AgentConfigs(ctx.api.db);
  const [current, versions] = await Promise.all([configs.current(agentId), configs.versions(agentId)]);
  const now = ctx.api.clock.wallNow();
  const h = view.live?.health;
  const attention = attentionOf(view, now);
  const pending = pendingChangesOf(view);
  const online = view.live?.online;
  const summary = html`<dl class="card"><dt>State</dt><dd>adopted ${view.enrolment.decidedAt === null ? '' : ctx.time.element(view.enrolment.decidedAt)}${
    view.enrolment.decidedBy ? ` by ${view.enrolment.decidedBy}` : ''
  }; ${online === true ? html`<span class="badge good">online</span>` : online === false ? html`<span class="badge bad">offline</span>` : html`<span class="muted">online or not: unknown</span>`}</dd>
<dt>Version</dt><dd>${versionOf(view) ?? 'unknown'}</dd>
<dt>Last sync</dt><dd>${h ? (h.cache.age_s === null ? 'never synced' : `${durationText(h.cache.age_s)} ago`) : view.report ? html`reported ${ctx.time.element(view.report.at)}` : 'never'}</dd>
<dt>Health</dt><dd>${h ? `${h.readers.online} of ${h.readers.total} readers online, outbox ${h.outbox_depth}` : 'no health message'}</dd>
<dt>Needs attention</dt><dd id="agent-attention">${attention.length === 0 ? 'no' : attention.join('; ')}</dd>
<dt>Pending changes</dt><dd>${pending.length === 0 ? 'none' : pending.join('; ')}</dd></dl>
<details><summary>What it reported at enrolment</summary>${factsList(view)}</details>`;
  const document = kept?.document ?? current?.document ?? '';
  const configForm = html`<section aria-labelledby="config-h"><h2 id="config-h">Configuration</h2>
<p>${current ? html`Version ${current.version}, stored ${ctx.time.element(current.createdAt)} by ${current.createdBy}.` : 'No version stored yet.'} The agent takes a new version at its next exchange with the service (every ${view.config.pollSeconds} s).</p>
${kept ? refusalBox(kept.refusal) : ''}
<form method="post" action="/console/agents/${agentId}/config">${csrfField(s.csrf)}
<p><label for="config-document">Configuration (YAML)</label><br><textarea id="config-document" name="document" rows="18" cols="90" spellcheck="false" required>
${document}</textarea></p>
<p><label for="config-note">Note</label> <input id="config-note" name="note" maxlength="500" size="50" value="${kept?.note ?? ''}"> <button>Save</button></p></form></section>`;
  const versionRows = versions.map(
    (
      v,
    ) => html`<tr id="version-${v.version}"><td data-label="Version">${v.version}${v.version === current?.version ? html` <span class="badge">current</span>` : ''}</td>
<td data-label="Stored">${ctx.time.element(v.createdAt)}</td><td data-label="By">${v.createdBy}</td><td data-label="Note">${v.note}</td><td>${
      v.version === current?.version
        ? ''
        : html`<form method="post" action="/console/agents/${agentId}/config/restore" class="inline">${csrfField(s.csrf)}<input type="hidden" name="version" value="${v.version}"><button aria-label="Restore version ${v.version}" data-confirm="Restore version ${v.version} of ${agentId}'s configuration, as a new version?">Restore</button></form>`
    }</td></tr>`,
  );
  const versionsTable =
    versions.length === 0
      ? html`<p>None.</p>`
      : html`<table><thead><tr><th scope="col">Version</th><th scope="col">Stored</th><th scope="col">By</th><th scope="col">Note</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>${versionRows}</tbody></table>`;
  const body = html`${summary}${configForm}<section aria-labelledby="versions-h"><h2 id="versions-h">Versions</h2>${versionsTable}</section>
<section aria-labelledby="report-h"><h2 id="report-h">Last report</h2>${reportSection(view, ctx)}</section>
<section aria-labelledby="firmware-h"><h2 id="firmware-h">Reader firmware</h2>${tasksSection(view, ctx)}</section>
<p><a href="/console/agents">All agents</a></p>`;
  const flash: Flash | undefined = takeFlash(request);
  return sendHtml(reply, page({ name: 'agents', title, who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash, body }), kept ? 400 : 200);
}

export function registerAgentPage(app: FastifyInstance, ctx: ConsoleContext): void {
  const idOf = (request: FastifyRequest) => agentParams.parse(request.params).agent_id;

  app.get('/console/agents/:agent_id', async (request, reply) => {
    ctx.api.requireRank(request, 'ADMIN');
    return agentPage(ctx, request, reply, idOf(request));
  });

  app.post('/console/agents/:agent_id/config', async (request, reply) => {
    const s = sessionOf(request);
    const agentId = idOf(request);
    const p = saveBody.parse(request.body);
    // A textarea sends its lines ended by CR LF: the document is kept as typed, with LF.
    const document = p.document.replace(/\r\n?/g, '\n');
    const note = (p.note ?? '').trim();
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'PUT', `/fleet/agents/${agentId}/config`, note === '' ? { document } : { document, note }, s.who);
    const back = `/console/agents/${agentId}`;
    if (answer.status === 200 || answer.status === 403) return redirectWithFlash(request, reply, back, answerText(answer, s.rank));
    // Refused (its problems), or not stored for another reason: the page again, with the text typed kept.
    return agentPage(ctx, request, reply, agentId, { document, note: p.note ?? '', refusal: answerText(answer, s.rank).text });
  });

  app.post('/console/agents/:agent_id/config/restore', async (request, reply) => {
    const s = sessionOf(request);
    const agentId = idOf(request);
    const { version } = restoreBody.parse(request.body);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', `/fleet/agents/${agentId}/config/restore`, { version }, s.who);
    return redirectWithFlash(request, reply, `/console/agents/${agentId}`, answerText(answer, s.rank));
  });
}
