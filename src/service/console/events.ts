import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { type ConsoleContext, sendHtml, sessionOf, takeFlash } from './context.js';
import { html, type Html } from './html.js';
import { page } from './layout.js';
import { grantWords, refusalWords, typeWords } from './eventWords.js';
import type { AuditEvent } from './siteFeed.js';
import type { SiteTime } from './siteTime.js';

const GRANTED = new Set(['access_granted']);
const DENIED = new Set(['access_denied', 'card_locked_out', 'keypad_locked_out', 'passback_violation', 'command_rejected']);

function resultOf(event: AuditEvent): 'granted' | 'denied' | 'other' {
  return GRANTED.has(event.type) ? 'granted' : DENIED.has(event.type) ? 'denied' : 'other';
}

/** What the console needs to name an event's door and person (a person is looked up in the database). */
export interface EventNames {
  door(uuid: string | null | undefined): string;
  person(emailId: number): Promise<string | null>;
}

/**
 * The names of events' doors and people. Given `known`, each person is looked up once and kept there: for one
 * page's render, not for a stream that lives on while names change.
 */
export function eventNames(ctx: ConsoleContext, known?: Map<number, Promise<string | null>>): EventNames {
  const lookUp = async (id: number) => {
    const u = await ctx.api.users.get(id);
    return u ? `${u.first_name} ${u.last_name}`.trim() || u.username : null;
  };
  return {
    door: (uuid) => (uuid ? (ctx.api.resources.find((r) => r.uuid === uuid.toLowerCase())?.name ?? uuid) : 'agent'),
    person: (id) => {
      if (known === undefined) return lookUp(id);
      const kept = known.get(id);
      if (kept !== undefined) return kept;
      const name = lookUp(id);
      known.set(id, name);
      return name;
    },
  };
}

async function personOf(event: AuditEvent, names: EventNames): Promise<string> {
  if (event.who) return event.who;
  const ids = (event.holders ?? []).flatMap((h) => (h.email_id === undefined ? [] : [h.email_id]));
  const named = await Promise.all(ids.map(async (id) => (await names.person(id)) ?? `email_id ${id}`));
  if (named.length > 0) return named.join(', ');
  return event.hint ?? '';
}

/** What happened, in words: "refused: outside its schedule", "granted: guest link", "door forced open". */
function eventWords(event: AuditEvent): { badge?: 'granted' | 'refused'; words: string } {
  if (event.type === 'access_granted') {
    const byLink = (event.holders ?? []).some((h) => h.magic_link_id !== undefined && !h.reason);
    return { badge: 'granted', words: grantWords(event.kind, byLink) };
  }
  if (event.type === 'access_denied') return { badge: 'refused', words: refusalWords(event.reason) };
  return { words: typeWords(event.type) };
}

function eventCell(event: AuditEvent, result: 'granted' | 'denied' | 'other'): Html {
  const { badge, words } = eventWords(event);
  const text = badge ? `${badge}: ${words}` : words;
  const shown = badge
    ? html`<span class="badge ${badge === 'granted' ? 'good' : 'bad'}">${badge}</span>: ${words}`
    : result === 'denied'
      ? html`<span class="bad">${words}</span>`
      : html`${words}`;
  return html`<td data-label="Event" title="${text}">${shown}</td>`;
}

/** The event's other facts: a grant's access level, a lock change's cause, a lockdown's reason. */
function detailOf(event: AuditEvent): string {
  if (event.type === 'access_granted') return event.level ? `level ${event.level}` : '';
  if (event.type === 'access_denied') return '';
  return event.cause ?? event.reason ?? '';
}

/** One event's row, and the fields a page's filter compares (the same ones the server filters on). */
export async function eventRow(event: AuditEvent, names: EventNames, time: SiteTime): Promise<{ row: Html; match: Record<string, string> }> {
  const result = resultOf(event);
  const person = await personOf(event, names);
  const door = names.door(event.door);
  const detail = detailOf(event);
  // One line each at a desk's width: a long door name or person ends in an ellipsis, its whole text in the title.
  return {
    row: html`<tr><td data-label="When">${time.element(event.at)}</td><td data-label="Door" title="${door}">${door}</td>
<td data-label="Who" title="${person}">${person}</td>${eventCell(event, result)}<td data-label="Detail" title="${detail}">${detail}</td></tr>`,
    match: { door: event.door?.toLowerCase() ?? '', person, result },
  };
}

const filterParams = z.object({
  door: z.string().max(100).optional(),
  person: z.string().max(200, 'at most 200 characters').optional(),
  result: z.enum(['', 'granted', 'denied']).optional(),
});

export function registerEvents(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/console/events', async (request, reply) => {
    const s = sessionOf(request);
    const f = filterParams.parse(request.query);
    const names = eventNames(ctx, new Map());
    const want = { door: (f.door ?? '').toLowerCase(), person: (f.person ?? '').trim().toLowerCase(), result: f.result ?? '' };
    // Where the rendered list stands: the page's stream starts after it, so an event that comes between this render
    // and the stream (live.ts) still reaches the page.
    const mark = ctx.feed?.eventMark() ?? '';
    const recent = ctx.feed?.recentEvents() ?? [];
    const rows = (await Promise.all(recent.map((e) => eventRow(e, names, ctx.time)))).filter(({ match }) =>
      Object.entries(want).every(([k, v]) => v === '' || (match[k] ?? '').toLowerCase().includes(v)),
    );
    const doors = ctx.api.resources.filter((r) => r.type === 'DOOR');
    const body = html`<form name="filter" method="get" action="/console/events" class="card">
<label for="f-door">Door</label><select id="f-door" name="door"><option value="">all</option>${doors.map(
      (d) => html`<option value="${d.uuid}"${want.door === d.uuid ? html` selected` : ''}>${d.name}</option>`,
    )}</select>
<label for="f-person">Person</label><input id="f-person" name="person" value="${f.person ?? ''}" size="16">
<label for="f-result">Result</label><select id="f-result" name="result">${(['', 'granted', 'denied'] as const).map(
      (r) => html`<option value="${r}"${want.result === r ? html` selected` : ''}>${r === '' ? 'all' : r === 'denied' ? 'refused' : r}</option>`,
    )}</select> <button>Filter</button></form>
${ctx.feed ? '' : html`<p class="flash error">The service has no mqtt section: it receives no events.</p>`}
<p class="muted">The last 1,000 events since the service started, newest first; new ones appear as they happen.</p>
<table class="events"><thead><tr><th scope="col" class="when">When</th><th scope="col" class="door">Door</th><th scope="col" class="who">Who</th><th scope="col" class="what">Event</th><th scope="col">Detail</th></tr></thead><tbody id="events" data-after="${mark}">${rows.map((r) => r.row)}</tbody></table>`;
    return sendHtml(reply, page({ name: 'events', title: 'Events', who: s.who, rank: s.rank, csrf: s.csrf, flash: takeFlash(request), live: true, body }));
  });
}
