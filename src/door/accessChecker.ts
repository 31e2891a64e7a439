import { readerCardFormat, type AccessOptions, type DoorOptions, type MemberPolicy } from './options.js';
import { credentialHint, duressOriginal, normalizeCredential, pinLabelSet, type CredentialKind, type DuressRule } from '../core/credentials.js';
import { decide, type AccessPolicy, type Decision, type DecisionContext, type Holder } from '../core/decision.js';
import { localTimeIn } from '../core/schedule.js';
import type { CredentialCache } from '../store/credentialCache.js';
import { CacheUnreadableError } from '../store/database.js';

export interface AccessRequest {
  door: DoorOptions;
  kind: CredentialKind;
  /** As presented: a card number in the door reader's format, PIN digits, or a QR token. */
  credential: string;
  now: number;
  keypadLockedOut?: boolean;
  cardLockedOut?: boolean;
  /** The door is in lockdown (its own or the agent's). */
  lockdown?: boolean;
}

export interface AccessResult extends Decision {
  door: string;
  kind: CredentialKind;
  /** What may be shown of the credential (never a whole card number). */
  hint: string;
  /** Granted on a duress PIN: the door opens as usual and a silent alarm goes out. */
  duress?: boolean;
}

export function memberPolicy(policy: MemberPolicy): AccessPolicy {
  return { groups: new Set(policy.groups), policies: new Set(policy.policies) };
}

/** The decision path at the door: normalize, look up the holders in the cache, decide. */
export class AccessChecker {
  private context: DecisionContext;
  private readonly configuredHolidays: readonly string[];
  private readonly pinLabels: ReadonlySet<string>;
  private readonly duressRule: DuressRule;
  private readonly minPinLength: number;
  private readonly firstPersonIn = new Map<string, AccessPolicy>();

  constructor(
    private readonly cache: CredentialCache,
    config: { access: AccessOptions; agent: { timezone: string } },
  ) {
    this.pinLabels = pinLabelSet(config.access.pinLabels);
    this.duressRule = config.access.duressPin;
    this.minPinLength = config.access.minPinLength;
    this.configuredHolidays = config.access.holidays;
    this.context = {
      access: memberPolicy(config.access),
      responders: config.access.responders ? memberPolicy(config.access.responders) : null,
      holidays: new Set(config.access.holidays),
      localTime: localTimeIn(config.agent.timezone),
    };
  }

  /** Holidays published by the service (retained on MQTT), in addition to the configured ones. */
  setPublishedHolidays(dates: readonly string[]): void {
    this.context = { ...this.context, holidays: new Set([...this.configuredHolidays, ...dates]) };
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
    const { door, kind } = request;
    const normalized = normalizeCredential(request.credential, kind, readerCardFormat(door));
    if (normalized === null) return null;
    const decision = this.decideFor(request, normalized);
    const result: AccessResult = { ...decision, door: door.uuid, kind, hint: credentialHint(normalized, kind) };
    if (result.granted || kind !== 'pin') return result;
    // A duress PIN (the user's PIN changed by the configured rule) opens as the user's own PIN would.
    const original = duressOriginal(request.credential, this.duressRule);
    const originalNormalized = original === null ? null : normalizeCredential(original, 'pin');
    if (originalNormalized === null || originalNormalized === normalized) return result;
    const underDuress = this.decideFor(request, originalNormalized);
    return underDuress.granted ? { ...underDuress, door: door.uuid, kind, hint: result.hint, duress: true } : result;
  }

  private decideFor(request: AccessRequest, normalized: string): Decision {
    const { door, kind } = request;
    // A PIN under the minimum length is refused without a lookup (so a shorter PIN in the directory never opens).
    const pinTooShort = kind === 'pin' && normalized.length < this.minPinLength;
    let holders: Holder[];
    try {
      holders = pinTooShort ? [] : kind === 'token' ? this.cache.holdersOfToken(normalized) : this.cache.holdersOfNumber(normalized, kind, this.pinLabels);
    } catch (err) {
      throw new CacheUnreadableError(err);
    }
    return decide(
      {
        kind,
        doorResourceId: door.resourceId,
        now: request.now,
        keypadLockedOut: request.keypadLockedOut ?? false,
        cardLockedOut: request.cardLockedOut ?? false,
        lockdown: request.lockdown ?? false,
        pinTooShort,
        firstPersonIn: this.firstPersonPolicy(door),
      },
      holders,
      this.context,
    );
  }

  private firstPersonPolicy(door: DoorOptions): AccessPolicy | undefined {
    if (!door.firstPersonIn) return undefined;
    let policy = this.firstPersonIn.get(door.uuid);
    if (!policy) this.firstPersonIn.set(door.uuid, (policy = memberPolicy(door.firstPersonIn)));
    return policy;
  }
}
