import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { type ConsoleContext, sendHtml, sessionOf, takeFlash } from './context.js';
import { html, type Html } from './html.js';
import { page } from './layout.js';
import { grantWords, refusalWords, typeWords } from './eventWords.js';
import { EventQuery } from '../audit/eventQuery.js';
import { parseAuditEvent, type AuditEvent } from './siteFeed.js';
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
    match: { door: event.door?.toLowerCase() ?? '', person, result, reason: event.reason ?? '' },
  };
}

const filterParams = z.object({
  door: z.string().max(100).optional(),
  person: z.string().max(200, 'at most 200 characters').optional(),
  result: z.enum(['', 'granted', 'denied']).optional(),
  reason: z.string().max(200, 'at most 200 characters').optional(),
  from: z.string().max(40).optional(),
  to: z.string().max(40).optional(),
  before: z
    .string()
    .regex(/^\d{1,15}$/)
    .optional(),
});

/** The event types of each result (the same split as the rows' badges). */
const RESULT_TYPES = { granted: [...GRANTED], denied: [...DENIED] } as const;
const PAGE_SIZE = 100;

/** A stored event as the page shows it: its fields checked; one that is not as expected shows its type and time. */
export function shownEvent(stored: Record<string, unknown>): AuditEvent {
  return (
    parseAuditEvent(stored) ?? {
      type: typeof stored.type === 'string' ? stored.type.slice(0, 64) : 'event',
      at: typeof stored.at === 'string' ? stored.at.slice(0, 40) : '',
    }
  );
}

export function registerEvents(app: FastifyInstance, ctx: ConsoleContext): void {
  const query = new EventQuery(ctx.api.db);
  app.get('/console/events', async (request, reply) => {
    const s = sessionOf(request);
    const f = filterParams.parse(request.query);
    const names = eventNames(ctx, new Map());
    const want = {
      door: (f.door ?? '').toLowerCase(),
      person: (f.person ?? '').trim(),
      result: f.result ?? '',
      reason: (f.reason ?? '').trim(),
    };
    // The time range, in the site's zone; a field that does not read is said, and left out of the query.
    const problems: string[] = [];
    const bound = (value: string | undefined) => {
      if (value === undefined || value === '') return undefined;
      const reading = ctx.time.readLocal(value);
      if ('problem' in reading) problems.push(reading.problem);
      return 'at' in reading ? reading.at : undefined;
    };
    const from = bound(f.from);
    const to = bound(f.to);
    if (from !== undefined && to !== undefined && to <= from) problems.push('the range ends before it starts: To must be after From');
    const before = f.before === undefined ? undefined : Number(f.before);
    // Where the rendered list stands: the page's stream starts after it, so an event that comes between this render
    // and the stream (live.ts) still reaches the page. Read before the page: an event stored meanwhile comes twice
    // at worst, never not at all.
    const mark = await query.newestId();
    const found =
      problems.length > 0
        ? { events: [], nextBefore: null }
        : ((await query.page({
            limit: PAGE_SIZE,
            ...(want.door ? { door: want.door } : {}),
            ...(want.person ? (/^\d{1,15}$/.test(want.person) ? { person: Number(want.person) } : { personText: want.person }) : {}),
            ...(want.result ? { types: RESULT_TYPES[want.result] } : {}),
            ...(want.reason ? { reason: want.reason } : {}),
            ...(from === undefined ? {} : { from }),
            ...(to === undefined ? {} : { to }),
            ...(before === undefined ? {} : { before }),
          })) ?? { events: [], nextBefore: null });
    const rows = await Promise.all(found.events.map((kept) => eventRow(shownEvent(kept.event), names, ctx.time)));
    // Live only while it shows the newest events: an older page, or a range that ends, stays as it is.
    const live = before === undefined && to === undefined;
    const doors = ctx.api.resources.filter((r) => r.type === 'DOOR');
    const older = new URLSearchParams(
      Object.entries({ door: f.door, person: f.person, result: f.result, reason: f.reason, from: f.from, to: f.to }).filter(
        (entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '',
      ),
    );
    if (found.nextBefore !== null) older.set('before', String(found.nextBefore));
    const body = html`<form name="filter" method="get" action="/console/events" class="card">
<label for="f-door">Door</label><select id="f-door" name="door"><option value="">all</option>${doors.map(
      (d) => html`<option value="${d.uuid}"${want.door === d.uuid ? html` selected` : ''}>${d.name}</option>`,
    )}</select>
<label for="f-person">Person</label><input id="f-person" name="person" value="${f.person ?? ''}" size="16">
<label for="f-result">Result</label><select id="f-result" name="result">${(['', 'granted', 'denied'] as const).map(
      (r) => html`<option value="${r}"${want.result === r ? html` selected` : ''}>${r === '' ? 'all' : r === 'denied' ? 'refused' : r}</option>`,
    )}</select>
<label for="f-reason">Reason</label><input id="f-reason" name="reason" value="${f.reason ?? ''}" size="12">
<label for="f-from">From</label><input id="f-from" name="from" type="datetime-local" value="${f.from ?? ''}">
<label for="f-to">To</label><input id="f-to" name="to" type="datetime-local" value="${f.to ?? ''}"> <button>Filter</button></form>
${problems.map((problem) => html`<p class="flash error" role="alert">${problem}</p>`)}
${ctx.feed ? '' : html`<p class="flash error">The service has no mqtt section: it receives no events.</p>`}
<p class="muted">Every event the service keeps, newest first${live ? '; new ones appear as they happen' : ''}.</p>
<table class="events"><thead><tr><th scope="col" class="when">When</th><th scope="col" class="door">Door</th><th scope="col" class="who">Who</th><th scope="col" class="what">Event</th><th scope="col">Detail</th></tr></thead><tbody id="events"${live ? html` data-after="${String(mark)}"` : ''}>${rows.map((r) => r.row)}</tbody></table>
${found.nextBefore === null ? '' : html`<p><a href="/console/events?${older.toString()}" rel="next">Older events</a></p>`}`;
    return sendHtml(
      reply,
      page({ name: 'events', title: 'Events', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), live, body }),
    );
  });
}
