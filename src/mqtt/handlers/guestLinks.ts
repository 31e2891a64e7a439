import type { Logger } from 'pino';
import { isRefusal, parseGuestLinkMessage } from '../../protocol/guestLinks.js';
import type { Topics } from '../../protocol/topics.js';
import type { GuestLinkStore } from '../../store/guestLinkStore.js';
import type { PendingWrites } from '../../store/pendingWrites.js';
import type { Clock } from '../../util/clock.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';
import type { RetainedClock } from '../retainedClock.js';

export interface GuestLinksDeps {
  topics: Topics;
  guestLinks: GuestLinkStore;
  /** Where cache writes wait while the database is busy or full (absent: written directly). */
  writes?: Pick<PendingWrites, 'run'>;
  /** The command secret when guest links must be signed (mqtt.commandSecretFile). */
  secret: string | null;
  /** Signed mode: a guest link signed longer ago than this is refused, and a stored one expires this long after its signature. */
  guestLinkMaxAgeSeconds?: number;
  /** Orders guest links' issued_at with times from the future clamped (absent: compared as given). */
  times?: RetainedClock;
  clock: Clock;
  logger: Logger;
  /** Whether the client is connected now (the reconcile runs only then). */
  connected: () => boolean;
}

const LINK_SETTLE_MS = 3000;

/**
 * Retained `P/guest-links/<magic_link_id>` in: a link validated and stored (or revoked), refused with a logged
 * reason. Unsigned mode reconciles after each connect: links received earlier that the broker no longer holds
 * (revoked while the agent was away) are removed once the retained links have arrived.
 */
export class GuestLinksHandler implements MqttHandler {
  readonly name = 'guest links';
  private readonly filters: HandlerSubscription[];
  private session = 0;
  private linksThisSession = new Set<string>();
  private reconcileTimer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: GuestLinksDeps) {
    this.filters = [{ filter: deps.topics.guestLinks, options: { qos: 1, rap: true } }];
  }

  subscriptions(): readonly HandlerSubscription[] {
    return this.filters;
  }

  onConnect(): void {
    this.scheduleReconcile(++this.session);
  }

  /**
   * The session ended: its reconcile is off, and the links of the next one are counted from nothing (here, since
   * its retained links may arrive before its onConnect).
   */
  onClose(): void {
    if (this.reconcileTimer) clearTimeout(this.reconcileTimer);
    this.reconcileTimer = null;
    this.linksThisSession = new Set();
  }

  stop(): void {
    if (this.reconcileTimer) clearTimeout(this.reconcileTimer);
  }

  onMessage(topic: string, payload: Buffer): void {
    const id = this.deps.topics.guestLinkOf(topic);
    if (id !== null) this.onGuestLink(id, payload);
  }

  /** A cache write that waits in memory while the database is busy or full (when the daemon gave a queue). */
  private write(key: string, write: () => void): void {
    if (this.deps.writes) this.deps.writes.run(key, write);
    else write();
  }

  /**
   * A revocation (empty retained payload) made while the agent was away is never delivered later: the broker
   * just has no retained link any more. So once the retained links of this connection have arrived (3 s
   * without another one), links received over MQTT earlier that the broker no longer holds are removed.
   */
  private scheduleReconcile(session: number): void {
    if (this.reconcileTimer) clearTimeout(this.reconcileTimer);
    // Signed mode: revocations are signed retained tombstones, and the absence of a retained link proves nothing
    // (any client can clear one), so nothing is removed on that ground.
    if (this.deps.secret !== null) return;
    this.reconcileTimer = setTimeout(() => {
      this.reconcileTimer = null;
      if (session !== this.session || !this.deps.connected()) return;
      const keep = new Set(this.linksThisSession);
      this.write('guest-links-reconcile', () => {
        const removed = this.deps.guestLinks.removeMqttLinksExcept(keep);
        if (removed.length > 0) this.deps.logger.info({ guestLinks: removed }, 'guest links revoked while the agent was away removed');
      });
    }, LINK_SETTLE_MS);
    this.reconcileTimer.unref();
  }

  private onGuestLink(id: string, payload: Buffer): void {
    const { logger, guestLinks } = this.deps;
    const message = parseGuestLinkMessage(id, payload, this.deps.secret);
    if (isRefusal(message)) {
      // Still counts as present on the broker: an unreadable retained link is not proof of a revocation.
      if (payload.length > 0) this.linksThisSession.add(id);
      return void logger.warn({ topic: this.deps.topics.guestLink(id), guestLink: id, reason: message.refused }, 'guest link refused');
    }
    // An issued_at from the future counts as now + mqtt.futureSkewSeconds: a later revocation overtakes it.
    let { issuedAt } = message;
    let future: number | null = null;
    if (issuedAt !== null && this.deps.times) {
      const ordered = this.deps.times.order('guest_links', guestLinks.versionOf(id), issuedAt);
      if (ordered.clamped && ordered.order !== 'newer') {
        if (message.kind === 'link') this.linksThisSession.add(id);
        // 'same': the retained message delivered again (a reconnect); 'stale': an older one from the future.
        if (ordered.order === 'stale')
          logger.warn({ guestLink: id, issuedAt }, 'guest link message refused: older than one from the future already applied (a replay?)');
        return;
      }
      ({ issuedAt, future } = ordered.next);
    }
    if (message.kind === 'revoke') {
      this.linksThisSession.delete(id);
      this.write(`guest-link-${id}`, () => logger.info({ guestLink: id, result: guestLinks.revoke(id, issuedAt, future) }, 'guest link revoked'));
      return;
    }
    this.linksThisSession.add(id);
    if (this.reconcileTimer) this.scheduleReconcile(this.session); // still arriving: wait for the burst to end
    // Signed mode: a signature is good for guestLinkMaxAgeSeconds. The service signs every live link again each
    // day; a link captured from the broker and replayed after its revocation (to a door that missed the
    // tombstone) is refused once older than that, and one stored stops opening then.
    const maxAgeMs = this.deps.secret !== null && issuedAt !== null ? (this.deps.guestLinkMaxAgeSeconds ?? 7 * 86_400) * 1000 : null;
    const validUntil = maxAgeMs === null ? null : issuedAt! * 1000 + maxAgeMs;
    if (validUntil !== null && validUntil <= this.deps.clock.wallNow()) {
      return void logger.warn(
        { guestLink: id, issuedAt: message.issuedAt },
        'guest link refused: signed longer ago than mqtt.guestLinkMaxAgeSeconds (a replay?)',
      );
    }
    this.write(`guest-link-${id}`, () => {
      const result = guestLinks.store(message.link, issuedAt, validUntil, future);
      if (result === 'over_budget') logger.warn({ guestLink: id }, 'guest link refused: the cache holds the most guest links allowed (mqtt.maxGuestLinks)');
      else logger.info({ guestLink: id, result }, 'guest link received');
    });
  }
}
