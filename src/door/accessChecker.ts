import { readerCardFormat, type AccessOptions, type DoorOptions, type MemberPolicy } from './options.js';
import { buildLevelSet, type LevelSet } from './levelSet.js';
import { serviceLevelsOf, serviceLevelsText } from '../store/serviceLevels.js';
import { credentialHint, duressOriginal, normalizeCredential, pinLabelSet, type CredentialKind, type DuressRule } from '../core/credentials.js';
import { explainLevels } from '../core/accessLevels.js';
import { decide, levelTime, refOf, type AccessPolicy, type Decision, type DecisionContext, type Holder, type HolderRef } from '../core/decision.js';
import { localTimeIn } from '../core/schedule.js';
import type { CredentialCache } from '../store/credentialCache.js';
import { CacheUnreadableError } from '../store/database.js';
import { isCacheDamage } from '../store/cacheDamage.js';
import { withProps } from '../core/objects.js';

export interface AccessRequest {
  door: DoorOptions;
  kind: CredentialKind;
  /**
   * As presented: for `check`, a card number in the door reader's format, PIN digits, or a QR token; for
   * `checkPresented`, as the reader normalized it (a card number as its decimal integer).
   */
  credential: string;
  /** A card's printed form (facility:card), tried when `credential` matches nobody (Wiegand, OSDP readers). */
  printed?: string;
  now: number;
  /** The door is in lockdown (its own or the agent's). */
  lockdown?: boolean;
  /** The cache is past access.maxCacheAgeHours: only responders and guest links are decided. */
  cacheTooOld?: boolean;
}

export interface AccessResult extends Decision {
  door: string;
  kind: CredentialKind;
  /** What may be shown of the credential (never a whole card number). */
  hint: string;
  /**
   * A duress PIN (a PIN changed by access.duressPin): decided as its owner's own PIN would be (granted or
   * refused, same signal), and a silent alarm goes out whatever the decision.
   */
  duress?: boolean;
  /** A card found by its printed form (facility:card), not by its number: events and check say so. */
  matchedBy?: 'printed';
  /** With duress: the holders of the PIN it stands for (named by the alarm, also when the decision refused). */
  duressHolders?: HolderRef[];
  /** A grant to a user: their name, as the directory gives it (who opened the door). */
  who?: string;
  /**
   * The credential's validity dates per holder, in the order of `holders` (null: none); only when one of them has
   * dates (shown by `door-agent check`).
   */
  validity?: Array<{ validFrom?: number | null; validUntil?: number | null } | null>;
}

/** Adds `validity` to a result when one of its holders' credentials has dates. */
function withValidity(result: AccessResult, holders: readonly Holder[]): AccessResult {
  const dated = (h: Holder) => (h.validFrom ?? null) !== null || (h.validUntil ?? null) !== null;
  if (!holders.some(dated)) return result;
  result.validity = holders.map((h) => (dated(h) ? { validFrom: h.validFrom ?? null, validUntil: h.validUntil ?? null } : null));
  return result;
}

function memberPolicy(policy: MemberPolicy): AccessPolicy {
  return { groups: new Set(policy.groups), policies: new Set(policy.policies) };
}

/** The decision path at the door: normalize, look up the holders in the cache, decide. */
export class AccessChecker {
  private context: DecisionContext;
  private levelSet: LevelSet;
  /** The stored service levels the set was built from (a reload with the same text changes nothing). */
  private serviceText: string | undefined;
  private readonly configuredHolidays: readonly string[];
  private readonly pinLabels: ReadonlySet<string>;
  private readonly duressRule: DuressRule;
  private readonly minCardDigits: number;
  private readonly minPinLength: number;
  private readonly firstPersonIn = new Map<string, AccessPolicy>();
  private readonly cacheOf: () => CredentialCache;

  /**
   * `cache`: the cache, or where to find it at each decision (the daemon's: a rebuilt cache replaces a damaged one);
   * `onCacheError` hears of each failed read of it (the daemon's store recognizes damage in it).
   */
  constructor(
    cache: CredentialCache | (() => CredentialCache),
    private readonly config: { access: AccessOptions; agent: { timezone: string }; doors: readonly DoorOptions[] },
    private readonly onCacheError?: (err: unknown) => void,
  ) {
    this.cacheOf = typeof cache === 'function' ? cache : () => cache;
    this.pinLabels = pinLabelSet(config.access.pinLabels);
    this.duressRule = config.access.duressPin;
    this.minCardDigits = config.access.minCardDigits;
    this.minPinLength = config.access.minPinLength;
    this.configuredHolidays = config.access.holidays;
    this.levelSet = buildLevelSet(config.access, config.doors, this.readServiceLevels());
    this.context = {
      levels: this.levelSet.index,
      responders: config.access.responders
        ? withProps(memberPolicy(config.access.responders), { everyDoor: config.access.responders.everyDoor === true })
        : null,
      holidays: new Set(config.access.holidays),
      localTime: localTimeIn(config.agent.timezone),
    };
  }

  /**
   * The service's levels as the cache holds them. A damaged cache holds none the daemon can read: the config's
   * levels alone until it is rebuilt (every credential is refused meanwhile, see holdersOf).
   */
  private readServiceLevels() {
    try {
      this.serviceText = serviceLevelsText(this.cacheOf().db);
      return serviceLevelsOf(this.serviceText);
    } catch (err) {
      this.onCacheError?.(err);
      if (isCacheDamage(err)) {
        this.serviceText = undefined;
        return serviceLevelsOf(undefined);
      }
      throw new CacheUnreadableError(err);
    }
  }

  /**
   * After a sync: the service's levels and resource groups as the cache now holds them, compiled once (not
   * again when they did not change). Returns whether they changed.
   */
  reloadLevels(): boolean {
    if (serviceLevelsText(this.cacheOf().db) === this.serviceText) return false;
    this.levelSet = buildLevelSet(this.config.access, this.config.doors, this.readServiceLevels());
    this.context = withProps(this.context, { levels: this.levelSet.index });
    return true;
  }

  /** The levels in force, compiled (status, check). */
  get levels(): LevelSet {
    return this.levelSet;
  }

  /** The decision context (check explains with it). */
  get decisionContext(): DecisionContext {
    return this.context;
  }

  /** Holidays published by the service (retained on MQTT), in addition to the configured ones. */
  setPublishedHolidays(dates: readonly string[]): void {
    this.context = withProps(this.context, { holidays: new Set([...this.configuredHolidays, ...dates]) });
  }

  /** The holidays in force: configured and published. */
  get holidays(): ReadonlySet<string> {
    return this.context.holidays;
  }

  /**
   * Returns null when the credential is malformed for its kind (the caller reports that, not a denial).
   * Throws CacheUnreadableError when the cache cannot be read (a damaged page, an I/O error).
   */
  check(request: AccessRequest): AccessResult | null {
    const normalized = normalizeCredential(request.credential, request.kind, readerCardFormat(request.door));
    if (normalized === null) return null;
    return this.checkPresented(withProps(request, { credential: normalized }));
  }

  /**
   * A credential a reader has normalized already (src/readers, the one place it is normalized): decided as it
   * is, never normalized again. `check` is this after normalizing what an operator typed. `name: false` leaves the
   * granted user's name (`who`, for the record) to `name()`: the door looks it up once the relay has moved.
   */
  checkPresented(request: AccessRequest, options: { name?: boolean } = {}): AccessResult {
    const naming = options.name ?? true;
    const { door, kind } = request;
    const normalized = request.credential;
    // A short "card" is most likely a PIN sent as a card line, and a PIN under the minimum length never opens:
    // both are refused without a lookup.
    const tooShort = kind === 'card' ? normalized.length < this.minCardDigits : kind === 'pin' && normalized.length < this.minPinLength;
    const found = tooShort ? { holders: [] } : this.cardOrOtherHolders(request);
    const hint = credentialHint(normalized, kind);
    if ('conflict' in found) return { granted: false, reason: 'card_ambiguous', holders: [], door: door.uuid, kind, hint };
    const holders = found.holders;
    // Each decision is made for this call alone: the door, kind and hint are set on it (before the relay: no copy).
    const result: AccessResult = withValidity(Object.assign(this.decideFor(request, holders, tooShort), { door: door.uuid, kind, hint }), holders);
    if (found.matchedBy) {
      result.matchedBy = found.matchedBy;
      result.hint = credentialHint(request.printed!, kind); // shown as it was enrolled: facility:…card
    }
    if (result.granted && naming) this.name(result);
    // A PIN someone holds is that PIN, never a duress PIN (the real PIN wins a collision, see directoryFindings).
    if (kind !== 'pin' || tooShort || holders.length > 0) return result;
    // The rule works on the digits as typed, which a PIN keeps (a PIN is not normalized beyond its check).
    const original = duressOriginal(normalized, this.duressRule);
    if (original === null || original === normalized) return result;
    const owners = this.holdersOf('pin', original, door);
    if (owners.length === 0) return result;
    // Decided as the owner's own PIN (lockdown, lockout, schedule alike): a guesser learns nothing more.
    const duress: AccessResult = withValidity(
      Object.assign(this.decideFor(request, owners, false), { door: door.uuid, kind, hint, duress: true, duressHolders: owners.map(refOf) }),
      owners,
    );
    if (duress.granted && naming) this.name(duress);
    return duress;
  }

  /**
   * For `check`: each user holding this credential, and each level they hold: whether it covers the door and is in
   * force at `request.now`, in words.
   */
  explain(request: AccessRequest): Array<{ holder: HolderRef; name: string | null; levels: string[] }> {
    const { door, kind } = request;
    const normalized = normalizeCredential(request.credential, kind, readerCardFormat(door));
    if (normalized === null) return [];
    const t = levelTime(request.now, this.context);
    const doorName = (uuid: string) => this.config.doors.find((d) => d.uuid === uuid)?.name ?? uuid;
    return this.holdersOf(kind, normalized, door).flatMap((holder) => {
      if (holder.kind !== 'user') return [];
      const levels = explainLevels(this.context.levels, door.uuid, holder, t, doorName).map((e) => e.text);
      if (levels.length === 0)
        levels.push(`holds no access level (groups: ${holder.groups.join(', ') || 'none'}; policies: ${holder.policies.join(', ') || 'none'})`);
      return [{ holder: refOf(holder), name: this.cacheOf().userName(holder.emailId), levels }];
    });
  }

  /** Adds the granted user's name (`who`): the first holder granted, when a user. Never throws. */
  name(result: AccessResult): void {
    const granted = result.holders.find((h) => h.reason === null)?.holder;
    if (!granted || !('email_id' in granted)) return;
    try {
      const name = this.cacheOf().userName(granted.email_id);
      if (name !== null) result.who = name;
    } catch {
      // The name is for the record only; the decision stands without it.
    }
  }

  /**
   * The holders of a credential; a card with a printed form is looked up by its number, then by the printed form.
   * Both matching different holders is a conflict: never guessed (card_ambiguous).
   */
  private cardOrOtherHolders(request: AccessRequest): { holders: Holder[]; matchedBy?: 'printed' } | { conflict: true } {
    const { kind, credential, printed, door } = request;
    const holders = this.holdersOf(kind, credential, door);
    if (kind !== 'card' || printed === undefined || printed === credential) return { holders };
    const byPrinted = this.holdersOf(kind, printed, door);
    if (byPrinted.length === 0) return { holders };
    if (holders.length === 0) return { holders: byPrinted, matchedBy: 'printed' };
    const key = (list: Holder[]) =>
      JSON.stringify(
        list
          .map(refOf)
          .map((r) => JSON.stringify(r))
          .sort(),
      );
    return key(holders) === key(byPrinted) ? { holders } : { conflict: true };
  }

  private holdersOf(kind: CredentialKind, normalized: string, door: DoorOptions): Holder[] {
    try {
      const cache = this.cacheOf();
      const holders = kind === 'token' ? cache.holdersOfToken(normalized) : cache.holdersOfNumber(normalized, kind, this.pinLabels);
      // At a card_and_pin door a guest link's card or QR token needs the link's PIN as its second factor.
      if (kind !== 'pin' && door.mode === 'card_and_pin') {
        for (const h of holders) if (h.kind === 'link') h.hasPin = cache.linkHasPin(h.magicLinkId, this.pinLabels);
      }
      return holders;
    } catch (err) {
      this.onCacheError?.(err);
      throw new CacheUnreadableError(err);
    }
  }

  /** `tooShort`: a card under access.minCardDigits or a PIN under access.minPinLength (no holders were looked up). */
  private decideFor(request: AccessRequest, holders: readonly Holder[], tooShort: boolean): Decision {
    const { door, kind } = request;
    return decide(
      {
        kind,
        doorResourceId: door.resourceId,
        doorUuid: door.uuid,
        now: request.now,
        lockdown: request.lockdown ?? false,
        cacheTooOld: request.cacheTooOld ?? false,
        pinTooShort: kind === 'pin' && tooShort,
        firstPersonIn: this.firstPersonPolicy(door),
        cardTooShort: kind === 'card' && tooShort,
        secondFactor: kind !== 'pin' && door.mode === 'card_and_pin',
      },
      holders,
      this.context,
    );
  }

  private firstPersonPolicy(door: DoorOptions): AccessPolicy | undefined {
    if (!door.firstPersonIn) return undefined;
    let policy = this.firstPersonIn.get(door.uuid);
    if (!policy) {
      policy = memberPolicy(door.firstPersonIn);
      this.firstPersonIn.set(door.uuid, policy);
    }
    return policy;
  }
}
