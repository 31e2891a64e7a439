import type { Logger } from 'pino';
import { guestLinkIndexTopic, parseGuestLinkIndex } from '../../protocol/guestLinkIndex.js';
import { isRetainedRefusal } from '../../protocol/retainedMessages.js';
import type { GuestLinkStore } from '../../store/guestLinkStore.js';
import type { PendingWrites } from '../../store/pendingWrites.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';
import type { RetainedClock } from '../retainedClock.js';

export interface GuestLinkIndexDeps {
  prefix: string;
  /** The command secret: the index is only used in signed mode (unsigned mode reconciles on reconnect). */
  secret: string;
  guestLinks: GuestLinkStore;
  writes: Pick<PendingWrites, 'run'>;
  times: RetainedClock;
  /** An index signed longer ago is refused (mqtt.guestLinkMaxAgeSeconds: the service re-sends it daily). */
  maxAgeSeconds: number;
  logger: Logger;
}

/**
 * Signed mode's reconcile path for guest links (protocol/guestLinkIndex.ts): a fresh, valid index removes the
 * links received over MQTT that it does not list, unless a message about a link is as recent as the index.
 */
export class GuestLinkIndexHandler implements MqttHandler {
  readonly name = 'guest-link index';
  private readonly topic: string;
  private readonly filters: HandlerSubscription[];
  private held: number | null = null;

  constructor(private readonly deps: GuestLinkIndexDeps) {
    this.topic = guestLinkIndexTopic(deps.prefix);
    this.filters = [{ filter: this.topic, options: { qos: 1 } }];
  }

  subscriptions(): readonly HandlerSubscription[] {
    return this.filters;
  }

  onMessage(topic: string, payload: Buffer): void {
    if (topic === this.topic) this.onIndex(payload);
  }

  private onIndex(payload: Buffer): void {
    const { logger, times } = this.deps;
    const message = parseGuestLinkIndex(payload, this.deps.secret);
    if (isRetainedRefusal(message)) return void logger.warn({ topic: this.topic, reason: message.refused }, 'guest-link index refused');
    if (message.kind !== 'set' || message.issuedAt === null) return; // cannot happen in signed mode
    if (times.tooOld(message.issuedAt, this.deps.maxAgeSeconds)) {
      return void logger.warn(
        { topic: this.topic, issuedAt: message.issuedAt },
        'guest-link index refused: signed longer ago than mqtt.guestLinkMaxAgeSeconds (a replay?)',
      );
    }
    const ordered = times.order('guest_link_index', { issuedAt: this.held }, message.issuedAt);
    if (ordered.order !== 'newer') return; // the same index again (a reconnect), or an older one
    this.held = ordered.next.issuedAt;
    const ids = new Set(message.body.ids);
    const at = ordered.next.issuedAt;
    this.deps.writes.run('guest-link-index', () => {
      const removed = this.deps.guestLinks.removeMqttLinksNotIndexed(ids, at);
      if (removed.length > 0)
        logger.info({ guestLinks: removed }, "guest links no longer in the service's index removed (revoked while this door did not hear it)");
    });
  }
}
