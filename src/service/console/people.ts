import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { cardsOwnedBySource, ownedElsewhere, sourceLabel } from '../identity/ownership.js';
import type { UserRow } from '../users.js';
import { answerText } from './delegation.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf, takeFlash } from './context.js';
import { html, type Html } from './html.js';
import { csrfField, page } from './layout.js';
import { CredentialMask } from './masking.js';

const MAX_QUERY = 200;
const MAX_RESULTS = 50;

const nameOf = (u: UserRow) => `${u.first_name} ${u.last_name}`.trim() || u.username;
const stateBadge = (u: UserRow) => (u.suspended ? html`<span class="badge bad">suspended</span>` : html`<span class="badge good">active</span>`);
/** Who owns a person, beside their name: nothing for the service's own, "LDAP" or "SCIM" otherwise. */
const sourceBadge = (u: UserRow) => {
  if (u.source === 'local') return html``;
  const word = u.source === 'ldap' ? 'LDAP' : 'SCIM';
  return html` <span class="badge" title="managed by ${word}">${word}</span>`;
};

/** A person in the search's results. */
const resultRow = (u: UserRow, groups: string[][]) =>
  html`<tr><td data-label="Name"><a href="/console/people/${u.email_id}">${nameOf(u)}</a>${sourceBadge(u)}</td><td data-label="E-mail">${u.email}</td>
<td data-label="Kind">${u.tag === 'GUEST' ? 'guest' : 'user'}</td><td data-label="State">${stateBadge(u)}</td>
<td data-label="Groups">${groups.map(([g]) => html`<span class="badge">${g}</span>`)}</td></tr>`;

/**
 * People whose name, e-mail or username contains the text (any case: both sides lowered, as PostgreSQL's LIKE minds
 * the case where SQLite's does not), at most MAX_RESULTS + 1 (to tell "more").
 */
async function search(ctx: ConsoleContext, text: string): Promise<UserRow[]> {
  const like = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return ctx.api.db.all<UserRow>(
    `SELECT * FROM users WHERE removed_at IS NULL AND (lower(email) LIKE lower(?) ESCAPE '\\' OR lower(username) LIKE lower(?) ESCAPE '\\'
       OR lower(first_name || ' ' || last_name) LIKE lower(?) ESCAPE '\\') ORDER BY first_name, last_name, email_id LIMIT ?`,
    [like, like, like, MAX_RESULTS + 1],
  );
}

/** The results of a search, as the fragment the page's script puts in place (and the page itself renders). */
async function resultsFragment(ctx: ConsoleContext, query: string): Promise<Html> {
  if (query.length > MAX_QUERY) {
    return html`<p class="flash error" role="alert">The search is ${query.length.toLocaleString('en')} characters long: at most ${MAX_QUERY} are searched. Shorten it.</p>`;
  }
  const found = await search(ctx, query.trim());
  if (found.length === 0) return html`<p role="status">Nobody matches “${query}”.</p>`;
  const shown = found.slice(0, MAX_RESULTS);
  const groups: string[][][] = [];
  for (const u of shown) groups.push(await ctx.api.users.groupsOf(u.email_id));
  return html`<p role="status" class="muted">${found.length > MAX_RESULTS ? `The first ${MAX_RESULTS} matches: type more to narrow.` : `${found.length} found.`}</p>
<table><thead><tr><th>Name</th><th>E-mail</th><th>Kind</th><th>State</th><th>Groups</th></tr></thead><tbody>${shown.map((u, i) => resultRow(u, groups[i]!))}</tbody></table>`;
}

const queryParams = z.object({ q: z.string().optional() });
const idParams = z.object({ id: z.coerce.number().int().positive() });
const actionBody = z.object({
  action: z.enum(['suspend', 'unsuspend', 'promote', 'add_card', 'remove_card']),
  number: z.string().optional(),
  label: z.string().optional(),
  position: z.coerce.number().int().nonnegative().optional(),
  hint: z.string().optional(),
});

export function registerPeople(app: FastifyInstance, ctx: ConsoleContext): void {
  const mask = new CredentialMask(ctx.api.pinLabels);
  const admin = (rank: string) => rank !== 'REGULAR';

  app.get('/console/people', async (request, reply) => {
    const s = sessionOf(request);
    const q = queryParams.parse(request.query).q ?? '';
    // A group SCIM or LDAP owns takes its members there (the API refuses them): not offered.
    const groups = await ctx.api.db.all<{ group_id: number; name: string }>(
      "SELECT group_id, name FROM groups WHERE type = 'users' AND source = 'local' ORDER BY name",
    );
    const invite = admin(s.rank)
      ? html`<details class="card"><summary>Invite people</summary><form method="post" action="/console/people/invite">${csrfField(s.csrf)}
<p><label for="invite-emails">E-mail addresses (comma or space between them)</label><br><input id="invite-emails" name="emails" required size="50"></p>
<p><label for="invite-group">Group</label> <select id="invite-group" name="group_id"><option value="">none</option>${groups.map((g) => html`<option value="${g.group_id}">${g.name}</option>`)}</select>
<button>Invite</button></p></form></details>`
      : html``;
    const body = html`<form role="search" action="/console/people" method="get" onsubmit="return true">
<label for="people-search">Search people by name, e-mail or username</label>
<input id="people-search" name="q" type="search" value="${q}" autocomplete="off" aria-controls="people-results"></form>
<section id="people-results" aria-live="polite">${await resultsFragment(ctx, q)}</section>${invite}`;
    return sendHtml(
      reply,
      page({ name: 'people', title: 'People', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), body }),
    );
  });

  app.get('/console/people/search', async (request, reply) => sendHtml(reply, await resultsFragment(ctx, queryParams.parse(request.query).q ?? '')));

  app.get('/console/people/:id', async (request, reply) => {
    const s = sessionOf(request);
    const { id } = idParams.parse(request.params);
    const user = await ctx.api.users.get(id);
    if (!user) return redirectWithFlash(request, reply, '/console/people', { kind: 'error', text: `No person with email_id ${id} (removed?).` });
    const cards = await ctx.api.users.smartcards(id);
    const groups = await ctx.api.users.groupsOf(id);
    const policies = await ctx.api.users.policiesOf(id);
    const form = (action: string, label: string, extra: Html = html``, confirm?: string) =>
      html`<form method="post" action="/console/people/${id}" class="inline">${csrfField(s.csrf)}<input type="hidden" name="action" value="${action}">${extra}<button${
        confirm ? html` data-confirm="${confirm}" class="danger"` : ''
      }>${label}</button></form>`;
    // What a source owns is changed there (identity/ownership.ts): its controls are left out, with where to go instead.
    const owned = user.source !== 'local';
    const cardsOwned = cardsOwnedBySource(user.source, ctx.api.identity);
    const elsewhere = (change: 'suspension' | 'cards') =>
      user.source === 'local' ? html`` : html`<p class="muted owned-note">${ownedElsewhere(user.email, user.source, change, ctx.api.identity).message}</p>`;
    const suspension = owned
      ? elsewhere('suspension')
      : user.suspended
        ? form('unsuspend', 'Unsuspend')
        : form('suspend', 'Suspend', html``, `Suspend ${nameOf(user)}? Their cards stop opening doors.`);
    const addCard = cardsOwned
      ? elsewhere('cards')
      : html`<form method="post" action="/console/people/${id}" class="inline">${csrfField(s.csrf)}<input type="hidden" name="action" value="add_card">
<label for="card-number">Card number</label><input id="card-number" name="number" required inputmode="numeric" autocomplete="off" size="14">
<label for="card-label">Label</label><input id="card-label" name="label" size="10" placeholder="badge"><button>Add card</button></form>`;
    const actions = admin(s.rank)
      ? html`<section aria-labelledby="actions-h"><h2 id="actions-h">Actions</h2>
${suspension}
${user.tag === 'GUEST' ? form('promote', 'Promote to user') : ''}
${addCard}</section>`
      : html`<p class="muted">Signed in as REGULAR: you can look, not change (actions need ADMIN).</p>`;
    const source =
      user.source === 'local'
        ? html`the service (API and console)`
        : html`${sourceLabel(user.source, ctx.api.identity)}${user.source_dn ? html` · <code>${user.source_dn}</code>` : ''}`;
    const body = html`<dl class="card"><dt>E-mail</dt><dd>${user.email}</dd><dt>Kind</dt><dd>${user.tag === 'GUEST' ? 'guest' : 'user'} · rank ${user.rank}</dd>
<dt>State</dt><dd id="person-state">${stateBadge(user)}</dd>
<dt>Managed by</dt><dd id="person-source">${source}</dd>
<dt>Groups</dt><dd>${groups.map(([g]) => html`<span class="badge">${g}</span>`)}</dd>
<dt>Policies and access levels</dt><dd>${policies.map(([p]) => html`<span class="badge">${p}</span>`)}</dd></dl>
<h2>Cards and PINs</h2>${
      cards.length === 0
        ? html`<p>None.</p>`
        : html`<table><thead><tr><th>Credential</th><th>Label</th><th>Valid</th><th><span class="muted">Action</span></th></tr></thead><tbody>${cards.map(
            (c, i) => html`<tr><td data-label="Credential">${mask.show(c)}</td><td data-label="Label">${c.label ?? ''}</td>
<td data-label="Valid">${c.valid_from ? ctx.time.element(c.valid_from) : ''}${c.valid_until ? html` until ${ctx.time.element(c.valid_until)}` : ''}</td><td>${
              admin(s.rank) && !cardsOwned
                ? form(
                    'remove_card',
                    'Remove',
                    html`<input type="hidden" name="position" value="${i}"><input type="hidden" name="hint" value="${mask.show(c)}">`,
                    `Remove ${mask.show(c)}?`,
                  )
                : ''
            }</td></tr>`,
          )}</tbody></table>`
    }${actions}<p><a href="/console/people">Back to the search</a></p>`;
    return sendHtml(
      reply,
      page({ name: 'people', title: nameOf(user), who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), body }),
    );
  });

  app.post('/console/people/:id', async (request, reply) => {
    const s = sessionOf(request);
    const { id } = idParams.parse(request.params);
    const p = actionBody.parse(request.body);
    const back = `/console/people/${id}`;
    // Read again now: another operator may have changed this person since the page was drawn.
    const user = await ctx.api.users.get(id);
    if (!user) return redirectWithFlash(request, reply, '/console/people', { kind: 'error', text: `No person with email_id ${id}: removed meanwhile?` });
    const call = async (method: 'PUT' | 'POST', url: string, body: Record<string, unknown>) =>
      redirectWithFlash(request, reply, back, answerText(await ctx.delegation.call(ctx.app, s.rank, method, url, body), s.rank));
    switch (p.action) {
      case 'suspend':
      case 'unsuspend': {
        const want = p.action === 'suspend';
        if ((user.suspended === 1) === want && s.rank !== 'REGULAR') {
          return redirectWithFlash(request, reply, back, {
            kind: 'ok',
            text: `${user.email} is already ${want ? 'suspended' : 'active'} (changed meanwhile): nothing to do.`,
          });
        }
        return call('PUT', '/togglesuspension', { email_id: id });
      }
      case 'promote':
        return call('PUT', '/promoteguest', { email_id: id });
      case 'add_card': {
        const number = (p.number ?? '').trim();
        const label = (p.label ?? '').trim();
        const current = await ctx.api.users.smartcards(id);
        return call('PUT', '/modifysmartcard', { email_id: id, smartcards: [...current, { number, label: label === '' ? null : label }] });
      }
      case 'remove_card': {
        const current = await ctx.api.users.smartcards(id);
        const card = p.position === undefined ? undefined : current[p.position];
        if (!card || mask.show(card) !== p.hint) {
          return redirectWithFlash(request, reply, back, {
            kind: 'error',
            text: 'The cards changed since the page was drawn: nothing removed. Look again and retry.',
          });
        }
        return call('PUT', '/modifysmartcard', { email_id: id, smartcards: current.filter((_c, i) => i !== p.position) });
      }
    }
  });

  app.post('/console/people/invite', async (request, reply) => {
    const s = sessionOf(request);
    const p = z.object({ emails: z.string().max(100_000), group_id: z.string().optional() }).parse(request.body);
    const emails = p.emails.split(/[\s,;]+/).filter(Boolean);
    const group = p.group_id ? [{ id: Number(p.group_id) }] : undefined;
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', '/invites', {
      emails,
      ...(group ? { groups: group } : {}),
      no_email: !ctx.mailConfigured,
    });
    return redirectWithFlash(request, reply, '/console/people', answerText(answer, s.rank));
  });
}
