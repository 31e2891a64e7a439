import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import type { Rank } from '../apiKeys.js';
import type { ServiceResource } from '../options.js';
import { type ConsoleContext, redirectWithFlash, sendHtml, sessionOf, takeFlash } from './context.js';
import { answerText } from './delegation.js';
import { html, type Html } from './html.js';
import { csrfField, page } from './layout.js';
import type { SiteFeed } from './siteFeed.js';
import type { SiteTime } from './siteTime.js';

/** One door's row: its live state from the feed and, for ADMIN and SUPER, its buttons. */
export function doorRow(door: ServiceResource, feed: SiteFeed | null, rank: Rank, csrf: string, time: SiteTime): Html {
  const live = feed?.door(door.uuid);
  const state = live?.state ?? null;
  const agent = feed?.agentOf(door.uuid) ?? null;
  const lock =
    state === null
      ? html`<span class="muted">not reported yet</span>`
      : state.state === 'LOCKED'
        ? html`<span class="badge good">locked</span>`
        : html`<span class="badge warn">unlocked${state.relock_at ? html` until ${time.element(state.relock_at, { soon: true })}` : state.emergency ? ' (fire alarm)' : ' (held open)'}</span>`;
  const flags: Html[] = [];
  if (state?.door === 'OPEN') flags.push(html`<span class="badge warn">open</span>`);
  if (state?.door === 'CLOSED') flags.push(html`<span class="badge">closed</span>`);
  if (live?.held) flags.push(html`<span class="badge bad">held open</span>`);
  if (live?.forced) flags.push(html`<span class="badge bad">forced</span>`);
  if (state?.tamper === 'ON') flags.push(html`<span class="badge bad">tamper</span>`);
  if (state?.lockdown) flags.push(html`<span class="badge bad">lockdown</span>`);
  if (state?.emergency) flags.push(html`<span class="badge bad">emergency release</span>`);
  const online =
    agent === null
      ? html`<span class="muted">no agent reported it yet</span>`
      : agent.online === false
        ? html`<span class="badge bad">agent ${agent.id} offline</span>`
        : html`<span class="badge good">agent ${agent.id} online</span>`;
  // Each button named with its door too: a screen reader's list of buttons otherwise reads "Unlock" once per door.
  const form = (action: string, label: string, extra: Html = html``, confirm?: string) =>
    html`<form method="post" action="/console/doors/${door.uuid}" class="inline">${csrfField(csrf)}<input type="hidden" name="action" value="${action}">${extra}<button aria-label="${label} ${door.name}"${
      confirm ? html` class="danger" data-confirm="${confirm}"` : ''
    }>${label}</button></form>`;
  const actions =
    rank === 'REGULAR'
      ? html`<span class="muted">ADMIN only</span>`
      : html`${form(
          'unlock',
          'Unlock',
          html`<label for="secs-${door.uuid}">for</label><input id="secs-${door.uuid}" aria-label="Unlock ${door.name} for how many seconds" name="seconds" type="number" min="1" max="604800" value="5" size="5" required><span>s</span>`,
        )}${form('lock', 'Lock')}${
          state?.lockdown
            ? form('lockdown_off', 'End lockdown')
            : form('lockdown_on', 'Lockdown', html``, `Lock down ${door.name}? Nobody gets in until it ends.`)
        }`;
  return html`<tr id="door-${door.uuid}"><th scope="row">${door.name}</th><td data-label="Lock">${lock}</td><td data-label="Contact">${flags}</td>
<td data-label="Agent">${online}</td><td data-label="Actions">${actions}</td></tr>`;
}

const actionBody = z.object({
  action: z.enum(['unlock', 'lock', 'lockdown_on', 'lockdown_off']),
  seconds: z.coerce.number().int().min(1, 'at least 1 s').max(604_800, 'at most 604800 s (7 days)').optional(),
});

export function registerDoors(app: FastifyInstance, ctx: ConsoleContext): void {
  const doors = () => ctx.api.resources.filter((r) => r.type === 'DOOR');

  app.get('/console/doors', async (request, reply) => {
    const s = sessionOf(request);
    const body = html`${ctx.feed ? '' : html`<p class="flash error">The service has no mqtt section: it cannot see or command the doors.</p>`}
<table><thead><tr><th scope="col">Door</th><th scope="col">Lock</th><th scope="col">Contact</th><th scope="col">Agent</th><th scope="col">Actions</th></tr></thead>
<tbody>${doors().map((d) => doorRow(d, ctx.feed, s.rank, s.csrf, ctx.time))}</tbody></table>`;
    return sendHtml(
      reply,
      page({ name: 'doors', title: 'Doors', who: s.who, rank: s.rank, csrf: s.csrf, banner: s.banner, flash: takeFlash(request), live: true, body }),
    );
  });

  app.post('/console/doors/:uuid', async (request, reply) => {
    const s = sessionOf(request);
    const uuid = z
      .object({ uuid: z.string().max(100) })
      .parse(request.params)
      .uuid.toLowerCase();
    const p = actionBody.parse(request.body);
    const door = doors().find((d) => d.uuid === uuid);
    if (!door) return redirectWithFlash(request, reply, '/console/doors', { kind: 'error', text: `No door with uuid ${uuid}.` });
    const agent = ctx.feed?.agentOf(uuid) ?? null;
    const offline = agent?.online === false ? agent.id : null;
    const back = (flash: { kind: 'ok' | 'error'; text: string }) => redirectWithFlash(request, reply, '/console/doors', flash);
    if (p.action === 'unlock' || p.action === 'lock') {
      // A command to an agent known to be offline would only wait for its timeout: not sent, and said so.
      if (offline !== null && s.rank !== 'REGULAR') {
        return back({ kind: 'error', text: `${door.name}: its agent ${offline} is offline, so the command was not sent.` });
      }
      const body = p.action === 'unlock' ? { uuid, lock_state: false, unlock_time: p.seconds ?? 5 } : { uuid, lock_state: true };
      return back(answerText(await ctx.delegation.call(ctx.app, s.rank, 'POST', '/setlockstatus', body), s.rank));
    }
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', '/lockdown', {
      uuid,
      active: p.action === 'lockdown_on',
      by: `console: ${s.who}`.slice(0, 128),
    });
    const flash = answerText(answer, s.rank);
    if (answer.status === 200 && offline !== null) flash.text += ` Its agent ${offline} is offline: it applies this when it reconnects.`;
    return back(flash);
  });
}
