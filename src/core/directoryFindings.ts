import { isPinLabel, normalizePrinted, pinLabelSet, type DuressRule } from './credentials.js';
import { printedNumberer, type WiegandFormatSpec, type WiegandNumbering } from './wiegandFormats.js';
import { withProps } from './objects.js';

/**
 * What a directory holds that weakens the doors, found in one pass over its credentials (issue 32 items 4 and 9):
 * - short cards: entries read as cards (label not in access.pinLabels) with fewer digits than access.minCardDigits,
 *   most likely PINs stored under another label ("Pin code"), which a reader that sends digits would open with;
 * - duress collisions: a PIN whose duress PIN (access.duressPin) is itself a PIN in the directory. Typing it opens
 *   as that PIN's holder and raises no alarm: the real PIN wins (see docs/operations.md, Door operations);
 * - ambiguous cards (issue 27): a card entered as printed (`123:45678`) for one holder and as the number the same
 *   card reads as on one of the site's readers for another: that card is refused at the door as card_ambiguous.
 * Never a number: counts, labels and holder ids only.
 */

/** The rules a scan applies (config access.pinLabels, duressPin, minCardDigits); plain data, it crosses threads. */
export interface DirectoryRules {
  pinLabels: readonly string[];
  duressPin: DuressRule;
  minCardDigits: number;
  /** access.minPinLength: the PINs shorter than it are counted (never accepted). Absent: not counted. */
  minPinLength?: number;
  /**
   * The numbering and formats of each of the site's Wiegand and OSDP readers (distinct): what a printed entry reads
   * as. Absent or empty: no reader hands on a printed form, no card can be ambiguous.
   */
  cardReads?: ReadonlyArray<CardRead>;
}

/** How one reader turns a card into the number it looks up (see wiegandFormats.ts, numbering). */
export interface CardRead {
  numbering: WiegandNumbering;
  formats: readonly WiegandFormatSpec[];
}

export interface CredentialEntry {
  /** Normalized digits, as the cache keeps them. */
  number: string;
  holderKind: 'user' | 'link';
  holderId: string;
  label: string | null;
  /** A PIN's digits as typed (leading zeros kept), where the cache keeps them apart from `number`. */
  digits?: string | null;
}

export interface DirectoryFindings {
  /** Card entries with a colon that are no facility:card (`12:`, `1:2:3`): they match no read. Absent: none. */
  malformedPrinted?: { count: number; labels: string[] };
  shortCards: { count: number; minDigits: number; labels: string[] };
  /**
   * Printed entries (facility:card) whose card reads, on a reader of the site, as a number held by someone else:
   * count of such printed entries, the holders on both sides, and the readers' numberings it happens under.
   * Absent: none.
   */
  ambiguousCards?: { count: number; emailIds: number[]; magicLinkIds: string[]; numberings: WiegandNumbering[] };
  /** null: access.duressPin is off (no duress PINs, nothing can collide). */
  duressCollisions: { count: number; emailIds: number[]; magicLinkIds: string[] } | null;
  /** PIN entries shorter than access.minPinLength (never accepted); with rules.minPinLength only. */
  shortPins?: { count: number; minLength: number };
}

/** A door's readers as the configuration gives them (only Wiegand and OSDP readers have a numbering and formats). */
interface ReaderLike {
  type: string;
  numbering?: unknown;
  formats?: readonly WiegandFormatSpec[];
}

/** The rules of a site: access.pinLabels, duressPin, minCardDigits, minPinLength, and how its readers number a card. */
export function directoryRules(
  access: Omit<DirectoryRules, 'cardReads'>,
  doors: ReadonlyArray<{ reader?: ReaderLike; exitReader?: ReaderLike }>,
): DirectoryRules {
  const reads = new Map<string, CardRead>();
  for (const reader of doors.flatMap((d) => [d.reader, d.exitReader])) {
    if (!reader || (reader.type !== 'wiegand' && reader.type !== 'osdp') || !reader.formats) continue;
    const read = { numbering: reader.numbering as WiegandNumbering, formats: reader.formats };
    reads.set(JSON.stringify([read.numbering, read.formats.map((f) => f.name)]), read);
  }
  return {
    pinLabels: access.pinLabels,
    duressPin: access.duressPin,
    minCardDigits: access.minCardDigits,
    ...(access.minPinLength !== undefined ? { minPinLength: access.minPinLength } : {}),
    cardReads: [...reads.values()],
  };
}

/** Lists (labels, ids) are cut to this many in logs, events and status: the counts stay whole. */
export const MAX_LISTED = 100;
const NO_LABEL = '(no label)';

/** The PIN a holder of `pin` would type under duress: the rule applied to the last digit (9 + 1 wraps to 0). @internal */
export function duressPinOf(pin: string, rule: DuressRule): string | null {
  if (rule === 'off' || !/^\d+$/.test(pin)) return null;
  const last = Number(pin[pin.length - 1]);
  const changed = rule === 'lastDigitPlusOne' ? (last + 1) % 10 : (last + 9) % 10;
  return `${pin.slice(0, -1)}${changed}`;
}

/**
 * Scans entries one by one (a streamed query): memory grows with the PINs, and with the cards when a reader of the
 * site hands on a printed form (one Map of numbers to holders: each printed entry is then looked up once per
 * numbering, never compared with every card).
 */
export class DirectoryScan {
  private readonly pinLabels: ReadonlySet<string>;
  private shortCount = 0;
  private shortPinCount = 0;
  private malformedCount = 0;
  private readonly malformedLabels = new Set<string>();
  private readonly shortLabels = new Set<string>();
  /** PIN -> holder keys ("user:101", "link:501"). */
  private readonly pins = new Map<string, string[]>();
  /** Card number or printed form -> holder keys; only kept when some reader hands on a printed form. */
  private readonly cards: Map<string, string[]> | null;

  constructor(private readonly rules: DirectoryRules) {
    this.pinLabels = pinLabelSet(rules.pinLabels);
    this.cards = rules.cardReads?.some((r) => r.numbering !== 'printed') ? new Map() : null;
  }

  add(entry: CredentialEntry): void {
    if (isPinLabel(entry.label, this.pinLabels)) {
      // Leading zeros count: the length is that of the digits as typed.
      const min = this.rules.minPinLength;
      if (min !== undefined && (entry.digits ?? entry.number).length < min) this.shortPinCount++;
      if (this.rules.duressPin === 'off') return;
      const key = `${entry.holderKind}:${entry.holderId}`;
      const holders = this.pins.get(entry.number);
      if (holders) holders.push(key);
      else this.pins.set(entry.number, [key]);
    } else if (entry.number.includes(':') && normalizePrinted(entry.number) !== entry.number) {
      this.malformedCount++;
      this.malformedLabels.add(entry.label?.trim() || NO_LABEL);
    } else {
      if (entry.number.length < this.rules.minCardDigits) {
        this.shortCount++;
        this.shortLabels.add(entry.label?.trim() || NO_LABEL);
      }
      if (this.cards) {
        const key = `${entry.holderKind}:${entry.holderId}`;
        const holders = this.cards.get(entry.number);
        if (holders) holders.push(key);
        else this.cards.set(entry.number, [key]);
      }
    }
  }

  result(): DirectoryFindings {
    const labels = [...this.shortLabels].sort().slice(0, MAX_LISTED);
    return withProps(
      this.malformedCount > 0 ? { malformedPrinted: { count: this.malformedCount, labels: [...this.malformedLabels].sort().slice(0, MAX_LISTED) } } : {},
      {
        shortCards: { count: this.shortCount, minDigits: this.rules.minCardDigits, labels },
        ...this.ambiguities(),
        duressCollisions: this.rules.duressPin === 'off' ? null : this.collisions(),
        ...(this.rules.minPinLength !== undefined ? { shortPins: { count: this.shortPinCount, minLength: this.rules.minPinLength } } : {}),
      },
    );
  }

  /** Each printed entry against the numbers its card reads as, per reader: as the door decides (accessChecker). */
  private ambiguities(): Pick<DirectoryFindings, 'ambiguousCards'> {
    if (!this.cards) return {};
    const reads = (this.rules.cardReads ?? []).map((r) => ({ numbering: r.numbering, numbersOf: printedNumberer(r.formats, r.numbering) }));
    const involved = new Set<string>();
    const numberings = new Set<WiegandNumbering>();
    let count = 0;
    const same = (a: string[], b: string[]) => new Set(a).size === new Set(b).size && a.every((k) => b.includes(k));
    for (const [number, holders] of this.cards) {
      const colon = number.indexOf(':');
      if (colon < 0) continue;
      let ambiguous = false;
      for (const read of reads) {
        for (const n of read.numbersOf(BigInt(number.slice(0, colon)), BigInt(number.slice(colon + 1)))) {
          const others = this.cards.get(n);
          if (!others || same(holders, others)) continue;
          ambiguous = true;
          numberings.add(read.numbering);
          for (const key of [...holders, ...others]) involved.add(key);
        }
      }
      if (ambiguous) count++;
    }
    if (count === 0) return {};
    const { emailIds, magicLinkIds } = holderIds(involved);
    return { ambiguousCards: { count, emailIds, magicLinkIds, numberings: [...numberings].sort() } };
  }

  private collisions(): NonNullable<DirectoryFindings['duressCollisions']> {
    const involved = new Set<string>();
    let count = 0;
    for (const [pin, holders] of this.pins) {
      const duress = duressPinOf(pin, this.rules.duressPin);
      const owners = duress === null ? undefined : this.pins.get(duress);
      if (!owners) continue;
      // One collision per holder whose duress PIN someone holds (a second PIN of the same user counts too).
      count += holders.length;
      for (const key of [...holders, ...owners]) involved.add(key);
    }
    return { count, ...holderIds(involved) };
  }
}

/** Holder keys ("user:101", "link:501") as the findings name them: email_ids in order, guest link ids. */
function holderIds(keys: ReadonlySet<string>): { emailIds: number[]; magicLinkIds: string[] } {
  const ids = (kind: string) => [...keys].filter((k) => k.startsWith(`${kind}:`)).map((k) => k.slice(kind.length + 1));
  return {
    emailIds: ids('user')
      .map(Number)
      .sort((a, b) => a - b),
    magicLinkIds: ids('link').sort(),
  };
}

/** A stable key of the collision set, to tell whether it changed since the last report. */
export function collisionKey(findings: DirectoryFindings): string {
  const c = findings.duressCollisions;
  return c === null || c.count === 0 ? '' : JSON.stringify([c.count, c.emailIds, c.magicLinkIds]);
}

const listed = (items: ReadonlyArray<string | number>) =>
  items.slice(0, MAX_LISTED).join(', ') + (items.length > MAX_LISTED ? ` and ${items.length - MAX_LISTED} more` : '');

/** The findings as warnings for people (import, sync, status, config check), short PINs last; empty when there is nothing to say. */
export function findingsWarnings(findings: DirectoryFindings): string[] {
  const lines: string[] = [];
  const short = findings.shortCards;
  if (short.count > 0) {
    lines.push(
      `${short.count} card ${short.count === 1 ? 'entry has' : 'entries have'} fewer than ${short.minDigits} digits ` +
        `(labels: ${listed(short.labels.map((l) => JSON.stringify(l)))}): most likely PINs under a label missing from ` +
        'access.pinLabels; a card read is refused as card_too_short. Add the label to access.pinLabels or correct them at the service',
    );
  }
  const bad = findings.malformedPrinted;
  if (bad) {
    lines.push(
      `${bad.count} card ${bad.count === 1 ? 'entry is' : 'entries are'} neither a number nor facility:card ` +
        `(labels: ${listed(bad.labels.map((l) => JSON.stringify(l)))}): no card read matches ${bad.count === 1 ? 'it' : 'them'}. Correct them at the service (e.g. 123:45678)`,
    );
  }
  const amb = findings.ambiguousCards;
  if (amb) {
    const who = [...amb.emailIds.map((id) => `email_id ${id}`), ...amb.magicLinkIds.map((id) => `guest link ${id}`)];
    lines.push(
      `${amb.count} card${amb.count === 1 ? ' is' : 's are'} in the directory both as printed (facility:card) and as the number ` +
        `${amb.count === 1 ? 'it reads' : 'they read'} as (numbering ${amb.numberings.join(', ')}), for different holders (${listed(who)}): ` +
        'the door refuses such a card as card_ambiguous. Keep one entry per card at the service',
    );
  }
  const c = findings.duressCollisions;
  if (c && c.count > 0) {
    const who = [...c.emailIds.map((id) => `email_id ${id}`), ...c.magicLinkIds.map((id) => `guest link ${id}`)];
    lines.push(
      `${c.count} duress PIN ${c.count === 1 ? 'collision' : 'collisions'} (${listed(who)}): a duress PIN that is also a PIN ` +
        "in the directory opens as that PIN's holder with no alarm (the real PIN wins). Change one of the PINs",
    );
  }
  const shortPins = findings.shortPins && shortPinsSentence(findings.shortPins.count, findings.shortPins.minLength);
  if (shortPins) lines.push(shortPins);
  return lines;
}

/**
 * The sentence status, sync, import, config check and the daemon's log use for the PINs shorter than
 * access.minPinLength (`shortPins`): they never open, and the operator should hear about them. Null when there are none.
 */
export function shortPinsSentence(count: number, minLength: number): string | null {
  if (count === 0) return null;
  return `${count} PIN${count === 1 ? '' : 's'} shorter than ${minLength} digits ${count === 1 ? 'is' : 'are'} never accepted (access.minPinLength)`;
}
