import { readerCardFormat, type AccessOptions, type DoorOptions } from './options.js';
import { credentialHint, normalizeCredential, pinLabelSet, type CredentialKind } from '../core/credentials.js';
import { decide, type Decision, type DecisionContext } from '../core/decision.js';
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
}

export interface AccessResult extends Decision {
  door: string;
  kind: CredentialKind;
  /** What may be shown of the credential (never a whole card number). */
  hint: string;
}

/** The decision path at the door: normalize, look up the holders in the cache, decide. */
export class AccessChecker {
  private readonly context: DecisionContext;
  private readonly pinLabels: ReadonlySet<string>;

  constructor(
    private readonly cache: CredentialCache,
    config: { access: AccessOptions; agent: { timezone: string } },
  ) {
    this.pinLabels = pinLabelSet(config.access.pinLabels);
    this.context = {
      access: { groups: new Set(config.access.groups), policies: new Set(config.access.policies) },
      localTime: localTimeIn(config.agent.timezone),
    };
  }

  /**
   * Returns null when the credential is malformed for its kind (the caller reports that, not a denial).
   * Throws CacheUnreadableError when the cache cannot be read (a damaged page, an I/O error).
   */
  check(request: AccessRequest): AccessResult | null {
    const { door, kind } = request;
    const normalized = normalizeCredential(request.credential, kind, readerCardFormat(door));
    if (normalized === null) return null;
    let holders;
    try {
      holders = kind === 'token' ? this.cache.holdersOfToken(normalized) : this.cache.holdersOfNumber(normalized, kind, this.pinLabels);
    } catch (err) {
      throw new CacheUnreadableError(err);
    }
    const decision = decide(
      {
        kind,
        doorResourceId: door.resourceId,
        now: request.now,
        keypadLockedOut: request.keypadLockedOut ?? false,
        cardLockedOut: request.cardLockedOut ?? false,
      },
      holders,
      this.context,
    );
    return { ...decision, door: door.uuid, kind, hint: credentialHint(normalized, kind) };
  }
}
