import type { LdapPerson } from './ldapEntries.js';

/**
 * The cards and PINs an LDAP sync gives (attributes.card, attributes.pin; docs/identity-sources.md, "What a sync
 * does"): only the rows of LDAP's labels are LDAP's, the service's stay; a number another active user holds is not
 * given (UserStore.newlyShared's rule), and is noted with a card's last 4 digits at most. Pure: no IO.
 */

/** A card or PIN as the service holds it. */
export interface HeldCard {
  number: string;
  label: string | null;
  validFrom: string | null;
  validUntil: string | null;
}

/** Which of a user's cards LDAP gives (attributes.card, attributes.pin); null: cards stay at the service. */
export interface CardMapping {
  card: boolean;
  pin: boolean;
  /** The label of a PIN: the first of server.pinLabels. */
  pinLabel: string;
}

/** The label of a card LDAP gives. */
export const LDAP_CARD_LABEL = 'LDAP';

export interface NewCard {
  number: string;
  label: string;
}

/** A card or PIN of an entry that is not given (logged with its last 4 digits at most). */
export interface CardNote {
  email: string;
  /** A card's last 4 digits; '' for a PIN, and for a value that is not a number. */
  last4: string;
  reason: string;
}

const CARD_NUMBER = /^\d{1,40}$/;

/** Whether the user's cards LDAP gives are `wanted` already. */
function sameCards(held: readonly HeldCard[], wanted: readonly NewCard[]): boolean {
  return (
    held.length === wanted.length &&
    held.every((c, i) => c.number === wanted[i]!.number && c.label === wanted[i]!.label && c.validFrom === null && c.validUntil === null)
  );
}

/**
 * Plans each user's cards in turn, keeping who holds each number as the plan goes: a number given to one entry
 * earlier in the sync is held for the entries after it.
 */
export class CardPlanner {
  /** The labels of the cards LDAP gives: a card of another label is the service's, and stays. */
  readonly labels: string[];
  private readonly holders = new Map<string, Set<number>>();

  constructor(
    private readonly mapping: CardMapping | null,
    cardHolders: ReadonlyMap<string, readonly number[]>,
    /** Where the numbers not given are noted (the plan's cardNotes). */
    private readonly notes: CardNote[],
  ) {
    for (const [number, ids] of cardHolders) this.holders.set(number, new Set(ids));
    this.labels = mapping === null ? [] : [...(mapping.card ? [LDAP_CARD_LABEL] : []), ...(mapping.pin ? [mapping.pinLabel] : [])];
  }

  private isLdapCard(c: HeldCard): boolean {
    return c.label !== null && this.labels.includes(c.label);
  }

  /** The user's new LDAP cards when they change; undefined when none is mapped or they are as LDAP says. */
  plan(holderId: number, allCards: readonly HeldCard[], person: LdapPerson & { email: string }): NewCard[] | undefined {
    const mapping = this.mapping;
    if (mapping === null) return undefined;
    const heldCards = allCards.filter((c) => this.isLdapCard(c));
    const own = new Set(heldCards.map((c) => c.number));
    const serviceGiven = new Set(allCards.filter((c) => !this.isLdapCard(c)).map((c) => c.number));
    const wanted: NewCard[] = [];
    const offer = (number: string | null, label: string, what: string) => {
      if (number === null) return;
      if (!CARD_NUMBER.test(number)) {
        this.notes.push({ email: person.email, last4: '', reason: `its ${what} is not 1 to 40 digits` });
        return;
      }
      if (serviceGiven.has(number)) {
        // The user holds it already, given at the service: kept as it is, not listed twice.
        this.notes.push({
          email: person.email,
          last4: what === 'PIN' ? '' : number.slice(-4),
          reason: `the user holds its ${what} already (given at the service)`,
        });
        return;
      }
      const heldElsewhere = [...(this.holders.get(number) ?? [])].some((id) => id !== holderId);
      if (wanted.some((c) => c.number === number) || (heldElsewhere && !own.has(number))) {
        // A PIN's last digits are most of it: never written anywhere.
        this.notes.push({ email: person.email, last4: what === 'PIN' ? '' : number.slice(-4), reason: `its ${what} is held by another user` });
        return;
      }
      wanted.push({ number, label });
    };
    if (mapping.card) offer(person.card, LDAP_CARD_LABEL, 'card');
    if (mapping.pin) offer(person.pin, mapping.pinLabel, 'PIN');
    if (sameCards(heldCards, wanted)) return undefined;
    for (const c of heldCards) this.holders.get(c.number)?.delete(holderId);
    for (const c of wanted) {
      const ids = this.holders.get(c.number) ?? new Set<number>();
      ids.add(holderId);
      this.holders.set(c.number, ids);
    }
    return wanted;
  }
}
