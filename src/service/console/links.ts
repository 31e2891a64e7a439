import type { FastifyInstance } from 'fastify';
import QRCode from 'qrcode';
import * as z from 'zod';
import { revokeLink, storedLinks, type StoredLink } from '../linkStore.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf, takeFlash } from './context.js';
import { answerText } from './delegation.js';
import { html, trusted, type Html } from './html.js';
import { csrfField, page } from './layout.js';
import type { SiteTime } from './siteTime.js';
import { serviceTimestamp } from '../users.js';

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** A time_mapping (7 lists of [start, end] hours, Sunday first) as a person reads it. */
function scheduleText(mapping: unknown): string {
  if (!Array.isArray(mapping)) return '';
  const days = mapping.flatMap((ranges, i) =>
    Array.isArray(ranges) && ranges.length > 0 ? [`${DAYS[i]} ${(ranges as number[][]).map(([a, b]) => `${a}-${b}`).join(', ')}`] : [],
  );
  return days.length === 7 && days.every((d) => d.endsWith(' 0-24')) ? 'every day, all day' : days.join('; ');
}

/**
 * A datetime-local field ("2026-05-01T09:00", a time in the site's zone) as the service's UTC "YYYY-MM-DD hh:mm:ss";
 * empty: undefined; not a time of that zone: the problem, named with the field's label.
 */
function serviceTimeOf(time: SiteTime, label: string, local: string | undefined): { value?: string } | { problem: string } {
  if (!local) return {};
  const read = time.readLocal(local);
  return 'at' in read ? { value: serviceTimestamp(read.at) } : { problem: `${label}: ${read.problem}` };
}

const createBody = z.object({
  name: z.string(),
  emails: z.string().max(100_000),
  doors: z.array(z.string().max(20)).max(10_000),
  start: z.string().max(20).optional(),
  end: z.string().max(20).optional(),
  from_hour: z.coerce.number().int().min(0).max(23).default(0),
  to_hour: z.coerce.number().int().min(1).max(24).default(24),
  ...Object.fromEntries(DAYS.map((d) => [`day_${d}`, z.string().optional()])),
});

export function registerLinks(app: FastifyInstance, ctx: ConsoleContext): void {
  const doors = () => ctx.api.resources.filter((r) => r.type === 'DOOR');
  const linkById = async (id: number) => (await storedLinks(ctx.api.db)).find((l) => l.magic_link_id === String(id));

  /** A link's doors by name (a resource the configuration no longer has: its id). */
  const doorNamesOf = (l: StoredLink) => l.resource_id_list.map((id) => doors().find((d) => d.resourceId === id)?.name ?? `#${id}`).join(', ');
  /** When a link works: from its start, until its end if it has one, in the site's zone; then its weekly hours. */
  const whenOf = (l: StoredLink): Html =>
    html`${l.start_time ? html`from ${ctx.time.element(String(l.start_time))}` : ''}${l.end_time ? html` until ${ctx.time.element(String(l.end_time))}` : ''}; ${scheduleText(l.time_mapping)}`;

  const row = (l: StoredLink, admin: boolean, csrf: string): Html => {
    const doorNames = doorNamesOf(l);
    return html`<tr><th scope="row">${String(l.name ?? '')}</th><td data-label="Guests">${(l.email_list as string[]).join(', ')}</td><td data-label="Doors">${doorNames}</td>
<td data-label="When">${whenOf(l)}</td>
<td data-label="Actions">${
      admin
        ? html`<a href="/console/links/${l.magic_link_id}" aria-label="QR code of ${String(l.name ?? '')}">QR code</a>
<form method="post" action="/console/links/${l.magic_link_id}/revoke" class="inline">${csrfField(csrf)}<button class="danger" aria-label="Revoke ${String(l.name ?? '')}" data-confirm="Revoke ${String(l.name ?? '')}? The doors forget it.">Revoke</button></form>`
        : html`<span class="muted">ADMIN only</span>`
    }</td></tr>`;
  };

  app.get('/console/links', async (request, reply) => {
    const s = sessionOf(request);
    const admin = s.rank !== 'REGULAR';
    const create = admin
      ? html`<form method="post" action="/console/links" class="card" aria-labelledby="new-link"><h2 id="new-link">New guest link</h2>${csrfField(s.csrf)}
<p><label for="l-name">Name</label><br><input id="l-name" name="name" required maxlength="200" size="30"></p>
<p><label for="l-emails">Guests' e-mail addresses</label><br><input id="l-emails" name="emails" required size="50"></p>
<fieldset><legend>Doors</legend>${doors().map(
          (d) => html`<label><input type="checkbox" name="doors" value="${d.resourceId}" checked> ${d.name}</label>`,
        )}</fieldset>
<fieldset><legend>Schedule</legend>${DAYS.map((d) => html`<label><input type="checkbox" name="day_${d}" value="1" checked> ${d}</label>`)}
<p><label for="l-from">from hour</label><input id="l-from" name="from_hour" type="number" min="0" max="23" value="0" size="3">
<label for="l-to">to hour</label><input id="l-to" name="to_hour" type="number" min="1" max="24" value="24" size="3"></p>
<p><label for="l-start">Starts (${ctx.time.zone})</label><input id="l-start" name="start" type="datetime-local"> <label for="l-end">Ends (${ctx.time.zone})</label><input id="l-end" name="end" type="datetime-local"></p></fieldset>
<p><button>Create guest link</button></p></form>`
      : html``;
    const links = await storedLinks(ctx.api.db);
    const body = html`${create}<h2>Guest links</h2>${
      links.length === 0
        ? html`<p>None.</p>`
        : html`<table><thead><tr><th scope="col">Name</th><th scope="col">Guests</th><th scope="col">Doors</th><th scope="col">When</th><th scope="col">Actions</th></tr></thead><tbody>${links.map(
            (l) => row(l, admin, s.csrf),
          )}</tbody></table>`
    }`;
    return sendHtml(
      reply,
      page({ name: 'links', title: 'Guest links', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), body }),
    );
  });

  // Its doors are a multiple choice: every door ticked is posted (doors=12&doors=13), each one kept.
  app.post('/console/links', { config: { formLists: ['doors'] } }, async (request, reply) => {
    const s = sessionOf(request);
    const p = createBody.parse(request.body) as z.output<typeof createBody> & Record<string, string | undefined>;
    const hours = [[p.from_hour, p.to_hour]];
    const start = serviceTimeOf(ctx.time, 'Starts', p.start);
    const end = serviceTimeOf(ctx.time, 'Ends', p.end);
    for (const read of [start, end]) if ('problem' in read) return redirectWithFlash(request, reply, '/console/links', { kind: 'error', text: read.problem });
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', '/magiclinkadmin', {
      name: p.name,
      email_list: p.emails.split(/[\s,;]+/).filter(Boolean),
      resource_id_list: p.doors.map(Number),
      time_mapping: DAYS.map((d) => (p[`day_${d}`] ? hours : [])),
      ...('value' in start ? { start_time: start.value } : {}),
      ...('value' in end ? { end_time: end.value } : {}),
      send_email: ctx.mailConfigured,
    });
    const flash = answerText(answer, s.rank);
    return redirectWithFlash(request, reply, answer.status === 200 ? `/console/links/${String(answer.body.magic_link_id)}` : '/console/links', flash);
  });

  app.get('/console/links/:id', async (request, reply) => {
    const s = sessionOf(request);
    ctx.api.requireRank(request, 'ADMIN');
    const id = z.object({ id: z.coerce.number().int().positive() }).parse(request.params).id;
    const link = await linkById(id);
    if (!link) return redirectWithFlash(request, reply, '/console/links', { kind: 'error', text: `No guest link ${id} (revoked?).` });
    // The QR code is the guest's credential (its token): shown to ADMIN and SUPER only, generated here as SVG.
    const svg = await QRCode.toString(String(link.magic_token), { type: 'svg', margin: 2, errorCorrectionLevel: 'M' });
    const body = html`<p>Hand this code to ${(link.email_list as string[]).join(', ')}: the door's reader takes it as the guest's pass.</p>
<dl class="card"><dt>Doors</dt><dd id="link-doors">${doorNamesOf(link)}</dd><dt>When</dt><dd>${whenOf(link)}</dd></dl>
<figure class="qr"><div id="qr" role="img" aria-label="QR code of guest link ${String(link.name ?? '')}">${trusted(svg)}</div>
<figcaption>${String(link.name ?? '')}</figcaption></figure><p><a href="/console/links">All guest links</a></p>`;
    return sendHtml(
      reply,
      page({
        name: 'links',
        title: `Guest link: ${String(link.name ?? '')}`,
        who: s.who,
        rank: s.rank,
        csrf: s.csrf,
        banner: s.banner,
        flash: takeFlash(request),
        body,
      }),
    );
  });

  app.post('/console/links/:id/revoke', async (request, reply) => {
    const id = z.object({ id: z.coerce.number().int().positive() }).parse(request.params).id;
    // No API route to delegate to: the same rank check, refused as every console refusal is (routes.ts).
    ctx.api.requireRank(request, 'ADMIN');
    const name = String((await linkById(id))?.name ?? id);
    const gone = await revokeLink(ctx.api, id);
    return redirectWithFlash(
      request,
      reply,
      '/console/links',
      gone ? { kind: 'ok', text: `Guest link ${name} revoked: the doors forget it.` } : { kind: 'error', text: `No guest link ${id}: revoked already?` },
    );
  });
}
