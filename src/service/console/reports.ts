import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { zonedClock } from '../../util/zonedClock.js';
import { BadRequest } from '../badRequest.js';
import { type ConsoleContext, sendHtml, sessionOf, takeFlash } from './context.js';
import { answerText } from './delegation.js';
import { html, type Html } from './html.js';
import { page } from './layout.js';
import type { SiteTime } from './siteTime.js';

const REPORTS = { passages: 'Passages', 'first-last': 'First in, last out', refusals: 'Refusals' } as const;
type ReportName = keyof typeof REPORTS;
/** The rows a page shows; the CSV has them all. */
const SHOWN_ROWS = 50;

/** The form's fields, passed on to the API as they are (it checks them and names a bad one). */
const formParams = z.object({
  report: z.enum(['passages', 'first-last', 'refusals']).optional(),
  from: z.string().max(40).optional(),
  to: z.string().max(40).optional(),
  person: z.string().max(20).optional(),
  door: z.string().max(100).optional(),
  area: z.string().max(100).optional(),
  by: z.enum(['reason', 'door']).optional(),
});
type FormParams = z.output<typeof formParams>;

type Cell = (row: Record<string, unknown>, time: SiteTime) => Html | string;
const text =
  (key: string): Cell =>
  (row) =>
    row[key] === null || row[key] === undefined ? '' : String(row[key]);
const when =
  (key: string): Cell =>
  (row, time) =>
    typeof row[key] === 'string' ? time.element(row[key]) : '';

/** Each report's columns on the page: heading and cell. */
function columnsOf(report: ReportName, by: 'reason' | 'door'): Array<[string, Cell]> {
  if (report === 'passages')
    return [
      ['When', when('at')],
      ['Who', text('person')],
      ['Door', text('door')],
      ['Credential', text('kind')],
      ['Level', text('level')],
      ['Area', text('area')],
    ];
  if (report === 'first-last')
    return [
      ['Day', text('date')],
      ['Who', text('person')],
      ['First in', when('first_in')],
      ['Door', text('first_door')],
      ['Last out', when('last_out')],
      ['Door', text('last_door')],
      ['Grants', text('grants')],
    ];
  return by === 'door'
    ? [
        ['Door', text('door')],
        ['Refusals', text('count')],
      ]
    : [
        ['Reason', text('reason')],
        ['Refusals', text('count')],
      ];
}

/** The API's query for the form's choices (only the fields given; `by` for refusals only). */
function apiQuery(f: FormParams & { from: string; to: string }, report: ReportName): URLSearchParams {
  const q = new URLSearchParams({ from: f.from, to: f.to });
  for (const key of ['person', 'door', 'area'] as const) {
    const value = f[key]?.trim();
    if (value) q.set(key, value);
  }
  if (report === 'refusals' && f.by) q.set('by', f.by);
  return q;
}

/**
 * The Reports page (ADMIN; docs/audit.md, "Reports"): a report chosen with its range and filters, its first rows,
 * and its CSV. Both go through the API's own route as the session (delegation.ts): the same checks, the same
 * refusals, the CSV streamed from the route to the browser as it is written.
 */
export function registerReports(app: FastifyInstance, ctx: ConsoleContext): void {
  const today = zonedClock(ctx.time.zone);
  app.get('/console/reports', async (request, reply) => {
    const s = sessionOf(request);
    const f = formParams.parse(request.query);
    const report: ReportName = f.report ?? 'passages';
    const now = ctx.api.clock.wallNow();
    const range = { from: f.from ?? today(now - 6 * 86_400_000).date, to: f.to ?? today(now).date };
    let flash = takeFlash(request);
    let results: Html = html``;
    if (f.report !== undefined) {
      const query = apiQuery(Object.assign({}, f, range), report);
      const answer = await ctx.delegation.call(ctx.app, s.rank, 'GET', `/reports/${report}?${query}&limit=${SHOWN_ROWS}`);
      if (answer.status === 200) results = resultsOf(ctx, report, f.by ?? 'reason', answer.body, query);
      else flash = answerText(answer, s.rank) as typeof flash;
    }
    const doors = ctx.api.resources.filter((r) => r.type === 'DOOR');
    const option = <T extends string>(value: T, label: string, chosen: T | undefined) =>
      html`<option value="${value}"${chosen === value ? html` selected` : ''}>${label}</option>`;
    const body = html`<form name="report" method="get" action="/console/reports" class="card">
<label for="r-report">Report</label><select id="r-report" name="report">${(Object.keys(REPORTS) as ReportName[]).map((r) => option(r, REPORTS[r], report))}</select>
<label for="r-from">From</label><input id="r-from" name="from" type="date" value="${range.from}" required>
<label for="r-to">To</label><input id="r-to" name="to" type="date" value="${range.to}" required>
<label for="r-person">Person (id)</label><input id="r-person" name="person" inputmode="numeric" size="8" value="${f.person ?? ''}">
<label for="r-door">Door</label><select id="r-door" name="door"><option value="">all</option>${doors.map((d) => option(d.uuid, d.name, f.door?.toLowerCase()))}</select>
<label for="r-area">Area</label><input id="r-area" name="area" size="10" value="${f.area ?? ''}">
<label for="r-by">Refusals by</label><select id="r-by" name="by">${option('reason', 'reason', f.by ?? 'reason')}${option('door', 'door', f.by)}</select>
<button>Show</button></form>
<p class="muted">Days and times are the site's (${ctx.time.zone}); a range covers at most ${ctx.api.audit?.maxReportDays ?? 366} days.</p>${results}`;
    return sendHtml(reply, page({ name: 'reports', title: 'Reports', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash, body }));
  });

  // The CSV: the API's answer passed through as the route writes it; a refusal is shown as a page, in words.
  app.get('/console/reports/download', async (request, reply) => {
    const s = sessionOf(request);
    const f = formParams.parse(request.query);
    if (f.report === undefined || f.from === undefined || f.to === undefined) throw new BadRequest('choose a report, from and to');
    const aborted = new AbortController();
    reply.raw.once('close', () => aborted.abort());
    const answer = await ctx.delegation.stream(
      ctx.app,
      s.rank,
      `/reports/${f.report}?${apiQuery(Object.assign({}, f, { from: f.from, to: f.to }), f.report)}&format=csv`,
      aborted.signal,
    );
    if (answer.status !== 200) {
      const chunks: Buffer[] = [];
      for await (const chunk of answer.body) chunks.push(Buffer.from(chunk as Buffer));
      const error = (JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { error?: string }).error;
      throw new BadRequest(answerText({ status: answer.status, body: { error } }, s.rank).text, answer.status);
    }
    return reply
      .type(String(answer.headers['content-type']))
      .header('content-disposition', String(answer.headers['content-disposition']))
      .header('cache-control', 'no-store')
      .send(answer.body);
  });
}

function resultsOf(ctx: ConsoleContext, report: ReportName, by: 'reason' | 'door', body: Record<string, unknown>, query: URLSearchParams): Html {
  const rows = Array.isArray(body.rows) ? (body.rows as Array<Record<string, unknown>>) : [];
  const columns = columnsOf(report, by);
  const more = body.next_after !== null && body.next_after !== undefined;
  const download = `/console/reports/download?report=${report}&${query}`;
  return html`<h2>${REPORTS[report]}</h2>
<p>${rows.length === 0 ? 'Nothing in this range.' : more ? `The first ${rows.length} rows.` : `${rows.length} rows.`}${
    report === 'refusals' && typeof body.total === 'number' ? ` ${body.total} refusals in all.` : ''
  } <a href="${download}" download>Download CSV</a></p>
${
  rows.length === 0
    ? ''
    : html`<table class="report"><thead><tr>${columns.map(([heading]) => html`<th scope="col">${heading}</th>`)}</tr></thead><tbody>${rows.map(
        (row) => html`<tr>${columns.map(([heading, cell]) => html`<td data-label="${heading}">${cell(row, ctx.time)}</td>`)}</tr>`,
      )}</tbody></table>`
}`;
}
