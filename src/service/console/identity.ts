import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import type { IdentitySourcesAnswer, SyncCounts, SyncRunAnswer } from '../../api/identity.js';
import { parseServiceTime } from '../../core/schedule.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf, takeFlash } from './context.js';
import { answerText } from './delegation.js';
import { html, type Html } from './html.js';
import { csrfField, page } from './layout.js';

const syncBody = z.object({ confirm_suspensions: z.coerce.number().int().nonnegative().optional() });

const number = (n: number) => n.toLocaleString('en');
const counted = (n: number, one: string, many: string) => `${number(n)} ${n === 1 ? one : many}`;
/** What a sync read: "10,000 entries and 12 groups read". */
const readOf = (counts: SyncCounts) => `${counted(counts.entries, 'entry', 'entries')} and ${counted(counts.groups, 'group', 'groups')} read`;

/** What a sync changed, in words: the counts that are not 0 ("3 created, 1 suspended"), or "nothing changed". */
function changesOf(counts: SyncCounts): string {
  const words: Array<[keyof SyncCounts, string]> = [
    ['created', 'created'],
    ['claimed', 'claimed from the service'],
    ['updated', 'updated'],
    ['suspended', 'suspended'],
    ['reactivated', 'active again'],
    ['removed', 'removed'],
    ['memberships', 'memberships changed'],
    ['groupsChanged', 'groups changed'],
    ['skipped', 'entries skipped (see the log)'],
  ];
  const said = words.filter(([key]) => counts[key] > 0).map(([key, word]) => `${number(counts[key])} ${word}`);
  return said.length === 0 ? 'nothing changed' : said.join(', ');
}

/** A sync's outcome as a flash after Sync now or Apply. */
function outcomeFlash(run: SyncRunAnswer): { kind: 'ok' | 'error'; text: string } {
  if (run.outcome === 'ok') return { kind: 'ok', text: `LDAP sync done: ${changesOf(run.counts)} (${readOf(run.counts)}).` };
  if (run.outcome === 'held') return { kind: 'error', text: `LDAP sync held, nothing applied: ${run.reason ?? 'it would suspend too many users'}` };
  if (run.outcome === 'failed') return { kind: 'error', text: `LDAP sync failed, nobody changed: ${run.reason ?? 'no reason given'}` };
  return { kind: 'ok', text: 'LDAP sync started.' };
}

const outcomeBadge = (run: SyncRunAnswer) =>
  html`<span class="badge${run.outcome === 'ok' ? ' good' : run.outcome === 'running' ? '' : ' bad'}">${run.outcome}</span>`;

/** How long a run took ("4 s"), or "" while it runs. */
function took(run: SyncRunAnswer): string {
  const start = parseServiceTime(run.started_at);
  const end = run.finished_at === null ? null : parseServiceTime(run.finished_at);
  return start === null || end === null ? '' : `${number(Math.max(0, Math.round((end - start) / 1000)))} s`;
}

/** Sync now, or (with `confirm`) Apply: the held sync again, allowing that many suspensions. */
function syncForm(csrf: string, confirm?: number): Html {
  const field = confirm === undefined ? html`` : html`<input type="hidden" name="confirm_suspensions" value="${confirm}">`;
  const button =
    confirm === undefined
      ? html`<button>Sync now</button>`
      : html`<button class="danger" data-confirm="Apply the held sync: ${number(confirm)} user(s) suspended or removed and group(s) emptied? Their cards stop opening those doors.">Apply: ${number(confirm)} suspension(s) and emptied group(s)</button>`;
  return html`<form method="post" action="/console/identity/sync" class="inline">${csrfField(csrf)}${field}${button}</form>`;
}

/** Each source's users and groups, and whether SCIM and LDAP are configured. */
function sourcesTable(sources: IdentitySourcesAnswer): Html {
  const row = (name: string, counts: { users: number; groups: number }, state: Html) =>
    html`<tr><th scope="row">${name}</th><td data-label="Users">${number(counts.users)}</td><td data-label="Groups">${number(counts.groups)}</td><td data-label="State">${state}</td></tr>`;
  const { scim, ldap } = sources;
  return html`<table><thead><tr><th scope="col">Source</th><th scope="col">Users</th><th scope="col">Groups</th><th scope="col">State</th></tr></thead><tbody>
${row('The service (API and console)', sources.local, html`always`)}
${row('SCIM (an identity provider)', scim, scim.enabled ? html`enabled at /scim/v2` : html`not configured (server.identity.scim)`)}
${row('LDAP', ldap, ldap.url === null ? html`not configured (server.identity.ldap)` : html`<code>${ldap.url}</code>`)}</tbody></table>`;
}

/** The last sync: outcome, when, what it changed, why; a held one with the people it would suspend and Apply. */
function lastSync(ctx: ConsoleContext, csrf: string, last: SyncRunAnswer | null): Html {
  if (last === null) return html`<p id="ldap-last">No sync yet.</p>`;
  const sample = last.sample ?? [];
  const held =
    last.outcome === 'held' && last.would_suspend !== null
      ? html`<p>It would suspend or remove users and empty groups, ${number(last.would_suspend)} in all (the reason says which)${sample.length > 0 ? '; the first users:' : '.'}</p>${
          sample.length > 0 ? html`<ul id="ldap-held-sample">${sample.map((email) => html`<li>${email}</li>`)}</ul>` : ''
        }<p>Check users.baseDn, users.filter, groups.baseDn and groups.filter first; apply only if these people have left and these groups are gone.</p>${syncForm(csrf, last.would_suspend)}`
      : '';
  return html`<div class="card" id="ldap-last"><p>Last sync: ${outcomeBadge(last)} ${ctx.time.element(last.started_at)}${took(last) ? `, took ${took(last)}` : ''}, asked by ${last.trigger}.</p>
<p>${last.outcome === 'running' ? 'Running.' : `${changesOf(last.counts)} (${readOf(last.counts)}).`}</p>${
    last.reason ? html`<p id="ldap-last-reason">${last.reason}</p>` : ''
  }${held}</div>`;
}

/** The recent syncs, the newest first. */
function recentSyncs(ctx: ConsoleContext, runs: SyncRunAnswer[]): Html {
  if (runs.length === 0) return html``;
  const row = (run: SyncRunAnswer) =>
    html`<tr id="sync-run-${run.run_id}"><th scope="row">${ctx.time.element(run.started_at)}</th><td data-label="Outcome">${outcomeBadge(run)}</td>
<td data-label="Took">${took(run)}</td><td data-label="Changes">${run.outcome === 'running' ? '' : changesOf(run.counts)}</td><td data-label="Asked by">${run.trigger}</td><td data-label="Reason">${run.reason ?? ''}</td></tr>`;
  return html`<h3>Recent syncs, the newest first</h3><table><thead><tr><th scope="col">Started</th><th scope="col">Outcome</th><th scope="col">Took</th><th scope="col">Changes</th><th scope="col">Asked by</th><th scope="col">Reason</th></tr></thead><tbody>${runs.map(row)}</tbody></table>`;
}

/**
 * The Identity page (docs/console/README.md, "Identity"), ADMIN and up: each source's users and groups, the LDAP
 * server, its last sync (outcome, when, what changed, why) and the recent ones; Sync now, and for a held sync the
 * users it would suspend with Apply. Every read and change is the API's own route (/identity-sources...), called
 * as the session.
 */
export function registerIdentity(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/console/identity', async (request, reply) => {
    ctx.api.requireRank(request, 'ADMIN');
    const s = sessionOf(request);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'GET', '/identity-sources', undefined, s.who);
    const show = (body: Html) =>
      sendHtml(reply, page({ name: 'identity', title: 'Identity', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), body }));
    if (answer.status !== 200) return show(html`<p class="flash error" role="alert">${answerText(answer, s.rank).text}</p>`);
    const sources = answer.body as unknown as IdentitySourcesAnswer;
    const { ldap } = sources;
    const when = (at: string | null, none: string) => (at === null ? none : ctx.time.element(at));
    const ldapSection = ldap.enabled
      ? html`<p>Server <code>${ldap.url ?? ''}</code>. Last good sync: ${when(ldap.last_ok_at, 'never')}. Next: ${when(ldap.next_at, 'not scheduled')}.</p>
${lastSync(ctx, s.csrf, ldap.last)}<p>${syncForm(s.csrf)}</p>${recentSyncs(ctx, ldap.recent)}`
      : html`<p>No LDAP source: set server.identity.ldap (docs/identity-sources.md) to take people from LDAP or Active Directory.</p>${recentSyncs(ctx, ldap.recent)}`;
    return show(html`<section aria-labelledby="sources-h"><h2 id="sources-h">Where people come from</h2>${sourcesTable(sources)}
<p class="muted">A person from SCIM or LDAP is suspended, enabled and removed there; the People page says where.</p></section>
<section aria-labelledby="ldap-h"><h2 id="ldap-h">LDAP sync</h2>${ldapSection}</section>`);
  });

  app.post('/console/identity/sync', async (request, reply) => {
    const s = sessionOf(request);
    const p = syncBody.parse(request.body);
    const body = p.confirm_suspensions === undefined ? undefined : { confirm_suspensions: p.confirm_suspensions };
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', '/identity-sources/ldap/sync', body, s.who);
    const flash = answer.status === 200 ? outcomeFlash(answer.body as unknown as SyncRunAnswer) : answerText(answer, s.rank);
    return redirectWithFlash(request, reply, '/console/identity', flash);
  });
}
