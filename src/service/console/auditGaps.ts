import { DEFAULT_GAP_SECONDS, gapsOf } from '../audit/chainGaps.js';
import type { ChainRow } from '../audit/eventStore.js';
import type { ConsoleContext } from './context.js';
import { html, type Html } from './html.js';

/** The most gaps the Agents page lists (the API lists every one: GET /audit/chains). */
const MAX_SHOWN = 20;

/**
 * The Agents page's word on the audit events missing at the service (docs/audit.md, "Where events are kept"): each
 * agent's gap, "events N-M missing since T", while it lasts; nothing when every chain is whole.
 */
export async function auditGapsNotice(ctx: ConsoleContext): Promise<Html | ''> {
  const { db, clock } = ctx.api;
  const chains = await db.all<ChainRow>('SELECT * FROM audit_chains WHERE gap_since IS NOT NULL ORDER BY agent_id, gap_since');
  const now = clock.wallNow();
  const ageMs = (ctx.api.audit?.gapSeconds ?? DEFAULT_GAP_SECONDS) * 1000;
  const lines: Html[] = [];
  for (const chain of chains) {
    for (const gap of await gapsOf(db, chain, now, ageMs)) {
      const events = gap.from === gap.to ? `event ${gap.from}` : `events ${gap.from}-${gap.to}`;
      lines.push(html`<li><strong>${chain.agent_id}</strong>: ${events} missing since ${ctx.time.element(gap.since)}</li>`);
    }
  }
  if (lines.length === 0) return '';
  const more = lines.length > MAX_SHOWN ? html`<li>and ${lines.length - MAX_SHOWN} more (GET /audit/chains lists them all)</li>` : '';
  return html`<section class="card" role="status" aria-label="Audit gaps"><p class="warn">Audit events not received while later ones were (a gap: the
service keeps every event; these have not come):</p><ul id="audit-gaps">${lines.slice(0, MAX_SHOWN)}${more}</ul></section>`;
}
