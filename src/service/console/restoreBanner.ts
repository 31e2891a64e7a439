import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { PendingRestore } from '../directoryHistory.js';
import { type ConsoleContext, redirectWithFlash, sessionOf } from './context.js';
import { answerText } from './delegation.js';
import { html, type Html } from './html.js';
import { csrfField } from './layout.js';
import type { Session } from './sessions.js';

const ACCEPT_PATH = '/console/restore/accept';

/**
 * The banner every page shows while a restore of the service's database awaits acceptance (docs/reference-service.md
 * "Backup and restore"), with Accept for ADMIN and SUPER; nothing otherwise.
 */
function restoreBanner(ctx: ConsoleContext, session: Session, restore: PendingRestore | null): Html {
  if (restore === null) return html``;
  const accept =
    session.rank === 'ADMIN' || session.rank === 'SUPER'
      ? html`<form method="post" action="${ACCEPT_PATH}" class="inline">${csrfField(session.csrf)}<button class="danger" data-confirm="Accept the restore? The doors then grant what the restored database grants: what was revoked after the backup and not made again opens doors again.">Accept the restore</button></form>`
      : html``;
  return html`<div class="flash error" id="restore-banner" role="alert"><p>The service's database was restored (detected ${ctx.time.element(restore.detectedAt)}). The doors keep refusing what it would grant beyond what they hold until you accept the restore. First make again what was revoked after the backup (door-agent status at a door lists what it holds back), then accept.</p>${accept}</div>`;
}

/** The banner of a signed-in page request, read now (one row). */
export async function bannerFor(ctx: ConsoleContext, session: Session): Promise<Html> {
  return restoreBanner(ctx, session, await ctx.api.directory.pendingRestore());
}

/** Accept the restore: the API's own route, as the session; back to the page it was posted from. */
export function registerRestoreAccept(app: FastifyInstance, ctx: ConsoleContext, backOf: (request: FastifyRequest) => string): void {
  app.post(ACCEPT_PATH, async (request, reply) => {
    const s = sessionOf(request);
    const answer = await ctx.delegation.call(ctx.app, s.rank, 'POST', '/directory/restore/accept', undefined, s.who);
    const flash =
      answer.status === 200
        ? {
            kind: 'ok' as const,
            text: `Restore accepted: the doors take the restored directory (revision ${String(answer.body.revision)}) at their next sync.`,
          }
        : answerText(answer, s.rank);
    return redirectWithFlash(request, reply, backOf(request), flash);
  });
}
