import type { Logger } from 'pino';
import { MAX_LISTED, collisionKey, shortPinsSentence, type DirectoryFindings } from '../core/directoryFindings.js';
import type { AgentStore } from '../store/agentStore.js';
import { readMeta, writeMeta } from '../store/meta.js';

/** state.db: the collision set last recorded as a duress_collision event (a restart does not record it again). */
const KEY = 'duress_collisions_reported';

/**
 * The daemon's side of the directory findings after each sync (issue 32 items 4 and 9): one warn line per kind of
 * finding and sync (counts, labels, email_ids; never a number), the short PINs once (again when their count
 * changes), and a `duress_collision` audit event when the set of collisions changed (also when it is resolved:
 * count 0), not on every sync.
 */
export class FindingsReporter {
  private last: string | null = null;
  /** The short PINs last warned of: said once, again when the count changes. */
  private shortPinsSaid = 0;

  constructor(private readonly deps: { store: AgentStore; wallNow: () => number; logger: Logger }) {}

  report(findings: DirectoryFindings): void {
    const { logger } = this.deps;
    const short = findings.shortCards;
    if (short.count > 0) {
      logger.warn(
        { count: short.count, labels: short.labels, min_digits: short.minDigits },
        'card entries shorter than access.minCardDigits in the directory (likely PINs under a label not in access.pinLabels): a card read of them is refused',
      );
    }
    const amb = findings.ambiguousCards;
    if (amb) {
      logger.warn(
        {
          count: amb.count,
          email_ids: amb.emailIds.slice(0, MAX_LISTED),
          ...(amb.magicLinkIds.length ? { magic_link_ids: amb.magicLinkIds.slice(0, MAX_LISTED) } : {}),
          numberings: amb.numberings,
        },
        'cards in the directory both as printed (facility:card) and as the number they read as, for different holders: such a card is refused (card_ambiguous)',
      );
    }
    const c = findings.duressCollisions;
    if (c && c.count > 0) {
      logger.warn(
        {
          count: c.count,
          email_ids: c.emailIds.slice(0, MAX_LISTED),
          ...(c.magicLinkIds.length ? { magic_link_ids: c.magicLinkIds.slice(0, MAX_LISTED) } : {}),
        },
        "duress PIN collisions in the directory: a duress PIN that is also someone's PIN opens as that PIN with no alarm; change one of the PINs",
      );
    }
    if (findings.shortPins) {
      const { count, minLength } = findings.shortPins;
      const sentence = shortPinsSentence(count, minLength);
      if (sentence && count !== this.shortPinsSaid) logger.warn({ count }, sentence);
      this.shortPinsSaid = count;
    }
    this.recordIfChanged(findings);
  }

  private recordIfChanged(findings: DirectoryFindings): void {
    const { store } = this.deps;
    const key = collisionKey(findings);
    try {
      this.last ??= readMeta<string>(store.state, KEY) ?? '';
      if (key === this.last) return;
      const c = findings.duressCollisions;
      store.events.append({
        type: 'duress_collision',
        door: null,
        at: this.deps.wallNow(),
        data: { count: c?.count ?? 0, email_ids: (c?.emailIds ?? []).slice(0, MAX_LISTED), magic_link_ids: (c?.magicLinkIds ?? []).slice(0, MAX_LISTED) },
      });
      this.last = key;
      store.writes.run(KEY, () => writeMeta(store.state, KEY, key));
    } catch (err) {
      this.deps.logger.error({ err }, 'cannot record the duress collisions');
    }
  }
}
