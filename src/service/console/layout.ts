import type { Rank } from '../apiKeys.js';
import { html, type Html } from './html.js';

export type PageName = 'people' | 'doors' | 'links' | 'events' | 'agents' | 'rollouts' | 'reports' | 'webhooks' | 'identity';

/** The navigation: each page, and the lowest rank it is listed for (a REGULAR session sees nothing of the fleet's rollouts). */
const NAV: Array<[PageName, string, Rank]> = [
  ['people', 'People', 'REGULAR'],
  ['doors', 'Doors', 'REGULAR'],
  ['links', 'Guest links', 'REGULAR'],
  ['events', 'Events', 'REGULAR'],
  ['agents', 'Agents', 'REGULAR'],
  ['rollouts', 'Rollouts', 'ADMIN'],
  ['reports', 'Reports', 'ADMIN'],
  ['webhooks', 'Webhooks', 'ADMIN'],
  ['identity', 'Identity', 'ADMIN'],
];

export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

function head(title: string): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · door-agent console</title><link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script></head>`;
}

export function flashBox(flash: Flash | undefined): Html {
  return flash ? html`<p class="flash ${flash.kind}" role="${flash.kind === 'error' ? 'alert' : 'status'}">${flash.text}</p>` : html``;
}

/**
 * A signed-in page: skip link, banner with the navigation and who is signed in, the main landmark. A `live` page
 * follows /console/live; `liveFilter` (`attention=1`) goes with it, so that the stream adds only the rows the page lists.
 * `banner`: what every page says above its own message while it holds (a restore awaiting acceptance).
 */
export function page(options: {
  name: PageName;
  title: string;
  who: string;
  rank: Rank;
  csrf: string;
  banner?: Html | undefined;
  flash?: Flash;
  live?: boolean;
  liveFilter?: string;
  body: Html;
}): Html {
  const listed = NAV.filter(([, , lowest]) => lowest === 'REGULAR' || options.rank !== 'REGULAR');
  return html`${head(options.title)}
<body${options.live ? html` data-live="${options.name}"` : ''}${options.live && options.liveFilter ? html` data-live-filter="${options.liveFilter}"` : ''}><a class="skip" href="#main">Skip to content</a>
<header><strong>door-agent</strong><nav aria-label="Console"><ul>${listed.map(
    ([name, label]) => html`<li><a href="/console/${name}"${name === options.name ? html` aria-current="page"` : ''}>${label}</a></li>`,
  )}</ul></nav>
<div class="who"><span>Signed in: ${options.who} (${options.rank})</span>
<form method="post" action="/console/logout" class="inline"><input type="hidden" name="csrf" value="${options.csrf}"><button>Sign out</button></form></div></header>
<main id="main"><h1>${options.title}</h1>${options.banner}${flashBox(options.flash)}${options.body}</main></body></html>`;
}

/** A page outside a session (sign-in). */
export function publicPage(title: string, body: Html): Html {
  return html`${head(title)}<body><main id="main" class="narrow"><h1>${title}</h1>${body}</main></body></html>`;
}

/** The hidden CSRF field every form of a session carries. */
export function csrfField(csrf: string): Html {
  return html`<input type="hidden" name="csrf" value="${csrf}">`;
}
