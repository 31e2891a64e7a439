import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { liveAgentRow } from './agents.js';
import { type ConsoleContext, sessionOf } from './context.js';
import { doorRow } from './doors.js';
import { EventQuery } from '../audit/eventQuery.js';
import { eventNames, eventRow, shownEvent } from './events.js';
import { cookieValue } from './signIn.js';
import type { SiteChange } from './siteFeed.js';

const KEEPALIVE_MS = 20_000;
/** The most events a stream sends at its start, and remembers having sent. */
const MAX_REMEMBERED = 1000;

/**
 * GET /console/live: one server-sent-events stream per open page, fed by the feed's changes as the broker delivers
 * them (no polling). Each change is rendered for this session (its rank decides the buttons) and sent as
 * `replace` (a door's or an agent's row) or `prepend` (an event row); `signedout` when the session ends. A doors or
 * agents stream starts with every row as it is then; an events stream with the events that came after the page's
 * mark (`after`, rendered into the page) or after the last one the stream sent (`Last-Event-ID`, when the browser
 * reconnects): none is missed between the render and the stream, nor while a connection was down.
 */
export function registerLive(app: FastifyInstance, ctx: ConsoleContext): void {
  const open = new Set<() => void>();
  const events = new EventQuery(ctx.api.db);
  // Before the server closes: it would otherwise wait for these streams, which never end on their own.
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  app.get('/console/live', async (request, reply) => {
    const s = sessionOf(request);
    const query = z
      .object({ page: z.enum(['doors', 'events', 'agents']), after: z.string().max(40).optional(), attention: z.literal('1').optional() })
      .parse(request.query);
    const pageName = query.page;
    const lastEventId = request.headers['last-event-id'];
    const afterText = typeof lastEventId === 'string' && lastEventId.length <= 40 ? lastEventId : query.after;
    // An event row's mark is its event_id (audit_events): the page's, or the last one this stream sent.
    const after = afterText !== undefined && /^\d{1,15}$/.test(afterText) ? Number(afterText) : undefined;
    const cookie = cookieValue(request);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    raw.write('retry: 2000\n\n');
    let ended = false;
    const send = (event: string, data: unknown, id?: string) => {
      if (!ended) raw.write(`${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const names = eventNames(ctx);
    const render = async (change: SiteChange) => {
      if (pageName === 'doors' && change.kind === 'door') {
        const door = ctx.api.resources.find((r) => r.uuid === change.uuid && r.type === 'DOOR');
        if (door) send('replace', { id: `door-${door.uuid}`, html: doorRow(door, ctx.feed, s.rank, s.csrf, ctx.time).text });
      } else if (pageName === 'agents' && change.kind === 'agent') {
        // A row the page's filter leaves out (Needs attention) replaces the one shown, but is not added.
        const row = await liveAgentRow(ctx, s, change.id, query.attention === '1');
        if (row) send('replace', Object.assign({ id: `agent-${change.id}`, html: row.html.text }, row.shown ? { parent: 'agents' } : {}));
      }
    };
    // Each event once: the ones stored since the page's mark, then each one this process's ingest takes (another
    // process may have stored it first: its event_id is then older than those already sent, or one of them).
    const sentIds = new Set<number>();
    const renderEvent = async (eventId: number, stored: Record<string, unknown>) => {
      if (after === undefined || eventId <= after || sentIds.has(eventId)) return;
      sentIds.add(eventId);
      if (sentIds.size > MAX_REMEMBERED) sentIds.delete(sentIds.values().next().value!);
      const { row, match } = await eventRow(shownEvent(stored), names, ctx.time);
      send('prepend', { id: 'events', html: row.text, match }, String(eventId));
    };
    // An event's row waits for its people's names (the database): the changes are rendered one after another, so
    // they reach the page in the order they came.
    let rendered = Promise.resolve();
    const onChange = (change: SiteChange) => {
      rendered = rendered.then(() => render(change)).catch((err: unknown) => ctx.api.logger.warn({ err }, 'console live stream: a change could not be shown'));
    };
    const unsubscribeFeed = ctx.feed?.subscribe(onChange) ?? (() => undefined);
    const unsubscribeEvents =
      pageName === 'events'
        ? (ctx.api.storedEvents?.subscribe((taken) => {
            rendered = rendered
              .then(() => renderEvent(taken.eventId, JSON.parse(taken.event.body) as Record<string, unknown>))
              .catch((err: unknown) => ctx.api.logger.warn({ err }, 'console live stream: an event could not be shown'));
          }) ?? (() => undefined))
        : () => undefined;
    const unsubscribe = () => {
      unsubscribeFeed();
      unsubscribeEvents();
    };
    // The rows as they are now, right after subscribing: a change between the page's render and this stream (a page
    // loaded after a POST while the door answers, a reconnect) would otherwise never reach the page.
    if (pageName === 'doors') for (const door of ctx.api.resources) if (door.type === 'DOOR') onChange({ kind: 'door', uuid: door.uuid });
    if (pageName === 'agents') for (const agent of ctx.feed?.agentList() ?? []) onChange({ kind: 'agent', id: agent.id });
    if (pageName === 'events' && after !== undefined) {
      const since = after;
      rendered = rendered
        .then(async () => {
          for (const kept of await events.after(since, MAX_REMEMBERED)) await renderEvent(kept.eventId, kept.event);
        })
        .catch((err: unknown) => ctx.api.logger.warn({ err }, 'console live stream: the events since the page could not be read'));
    }
    // The session is checked again at each keep-alive: an expired one ends the stream and the page goes to sign-in.
    // A check that fails (the database out of reach) keeps the stream: the next one asks again.
    const keepAlive = setInterval(() => {
      ctx.sessions.use(cookie, false).then(
        (found) => {
          if (ended) return;
          if ('problem' in found) {
            send('signedout', {});
            end();
          } else raw.write(': keep-alive\n\n');
        },
        (err: unknown) => {
          ctx.api.logger.warn({ err }, 'console live stream: the session could not be checked');
          if (!ended) raw.write(': keep-alive\n\n');
        },
      );
    }, KEEPALIVE_MS);
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(keepAlive);
      unsubscribe();
      open.delete(end);
      raw.end();
    };
    open.add(end);
    request.raw.on('close', end);
  });
}
