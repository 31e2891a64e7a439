import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { firstLastReportSchema, passagesReportSchema, refusalsReportSchema } from '../../api/reports.js';
import { documented } from '../openapi/routeDoc.js';
import { BadRequest, intParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { csvLine } from './csv.js';
import { doorNamer, type Report, type ReportFilter, type ReportPage, type ReportSource } from './reports.js';
import { firstLastReport } from './reportsFirstLast.js';
import { passagesReport } from './reportsPassages.js';
import { refusalsReport } from './reportsRefusals.js';
import { readReportRange, type ReportRange } from './reportRange.js';
import { ReportZone } from './reportZone.js';

/** server.audit.maxReportDays when the service is built without server.audit (a test, the bench). */
const DEFAULT_MAX_REPORT_DAYS = 366;
/** A JSON page's rows unless `limit` says. */
const DEFAULT_PAGE_ROWS = 1000;
const MAX_PAGE_ROWS = 10_000;
/** CSV is written a batch of rows at a time, each batch as it is read. */
const CSV_BATCH_ROWS = 5000;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const reportParams = z.object({
  from: z.string().max(40).describe("YYYY-MM-DD (the day's start in the site's zone) or an ISO 8601 time (no offset: the site's)"),
  to: z.string().max(40).describe('YYYY-MM-DD (the whole day is in) or an ISO 8601 time (not included)'),
  person: intParam.pipe(z.number().int().min(1)).optional().describe("a user's email_id"),
  door: z
    .string()
    .regex(UUID, 'expected a door uuid')
    .transform((s) => s.toLowerCase())
    .optional(),
  area: z.string().min(1).max(100).optional(),
  format: z.enum(['json', 'csv']).optional().describe('csv: as Accept: text/csv'),
  limit: intParam.pipe(z.number().int().min(1).max(MAX_PAGE_ROWS)).optional().describe(`JSON: rows a page (default ${DEFAULT_PAGE_ROWS})`),
  after: z.string().max(60).optional().describe("JSON: the previous page's next_after"),
});
const refusalParams = reportParams.extend({ by: z.enum(['reason', 'door']).default('reason').describe('what the refusals are counted by') });
type ReportParams = z.output<typeof reportParams> & { by?: 'reason' | 'door' };
/** What every JSON report says of itself (src/api/reports.ts). */
type ReportHead = { report: Report<unknown>['name']; from: string; to: string; timezone: string };

/**
 * The reports (docs/audit.md, "Reports"; ADMIN): GET /reports/passages, /reports/first-last, /reports/refusals over
 * a range of the site's days. JSON a page at a time (limit, after = next_after); CSV (Accept: text/csv or
 * format=csv) the whole range, streamed as it is read.
 */
export function registerReportRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const zone = new ReportZone(ctx.timezone ?? new Intl.DateTimeFormat().resolvedOptions().timeZone);
  const source: ReportSource = { db: ctx.db, zone, doorName: doorNamer(ctx.resources) };
  const maxDays = ctx.audit?.maxReportDays ?? DEFAULT_MAX_REPORT_DAYS;
  const csvNote = 'With `Accept: text/csv` or `format=csv`: the whole range as CSV (RFC 4180, a header row), streamed as it is read.';

  /** The report as CSV (a stream), or its JSON page as `json` shapes it; every parameter checked first. */
  const answer = async <Row>(
    report: Report<Row>,
    request: FastifyRequest,
    reply: FastifyReply,
    p: ReportParams,
    json: (head: ReportHead, page: ReportPage<Row>) => object,
  ) => {
    const range = readReportRange(zone, p.from, p.to, maxDays);
    const filter: ReportFilter = {};
    if (p.person !== undefined) filter.person = p.person;
    if (p.door !== undefined) filter.door = p.door;
    if (p.area !== undefined) filter.area = p.area;
    if (p.by !== undefined) filter.by = p.by;
    if (wantsCsv(request, p.format)) {
      return reply
        .type('text/csv; charset=utf-8; header=present')
        .header('content-disposition', `attachment; filename="${report.name}-${range.firstDate}-to-${range.lastDate}.csv"`)
        .send(Readable.from(csvOf(report, source, range, filter), { objectMode: false }));
    }
    const page = await report.page(source, range, filter, p.after ?? null, p.limit ?? DEFAULT_PAGE_ROWS);
    return json({ report: report.name, from: zone.iso(range.start), to: zone.iso(range.end), timezone: zone.zone }, page);
  };
  const paged = <Row>(head: ReportHead, page: ReportPage<Row>) => Object.assign(head, { rows: page.rows, next_after: page.nextAfter });
  /** The rank first: a key that may not read reports learns nothing of its parameters. */
  const params = (schema: z.ZodType<ReportParams>, request: FastifyRequest) => {
    ctx.requireRank(request, 'ADMIN');
    return parseParams(schema, request.query, undefined);
  };

  app.get(
    '/reports/passages',
    documented({
      summary: 'Who went through which door and when (the grants), oldest first.',
      description: `Filters: \`person\`, \`door\`, \`area\`. ${csvNote}`,
      tag: 'Reports',
      key: 'ADMIN',
      params: reportParams,
      answer: passagesReportSchema,
    }),
    async (request, reply) => answer(passagesReport, request, reply, params(reportParams, request), paged),
  );
  app.get(
    '/reports/first-last',
    documented({
      summary: "Per person per day (the site's days), the first grant and the last, with their doors.",
      description: `Filters: \`person\`, \`door\`, \`area\` (the first and last grant there). ${csvNote}`,
      tag: 'Reports',
      key: 'ADMIN',
      params: reportParams,
      answer: firstLastReportSchema,
    }),
    async (request, reply) => answer(firstLastReport, request, reply, params(reportParams, request), paged),
  );
  app.get(
    '/reports/refusals',
    documented({
      summary: 'The refusals counted by reason (or by door with by=door), most first.',
      description: `Filters: \`person\`, \`door\`. The whole report in one answer (\`limit\` and \`after\` do not apply). ${csvNote}`,
      tag: 'Reports',
      key: 'ADMIN',
      params: refusalParams,
      answer: refusalsReportSchema,
    }),
    async (request, reply) => {
      const p = params(refusalParams, request);
      // A refusal let no one through: it is of no area (an area is a passage's).
      if (p.area !== undefined) throw new BadRequest('area: a refusal has no area (filter by door)');
      return answer(refusalsReport, request, reply, p, (head, page) =>
        Object.assign(head, { by: p.by ?? 'reason', rows: page.rows, total: page.rows.reduce((sum, r) => sum + r.count, 0) }),
      );
    },
  );
}

/** CSV when `format=csv`, or without `format` when the Accept header asks for text/csv. */
function wantsCsv(request: FastifyRequest, format: 'json' | 'csv' | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  return /(^|,)\s*text\/csv\b/i.test(request.headers.accept ?? '');
}

/** The header row, then each batch of rows as the database gives it. */
async function* csvOf<Row>(report: Report<Row>, source: ReportSource, range: ReportRange, filter: ReportFilter): AsyncGenerator<string> {
  yield csvLine(report.csvHeader(filter));
  let after: string | null = null;
  do {
    const page = await report.page(source, range, filter, after, CSV_BATCH_ROWS);
    if (page.rows.length > 0) yield page.rows.map((row) => csvLine(report.csvValues(row, filter))).join('');
    after = page.nextAfter;
  } while (after !== null);
}
