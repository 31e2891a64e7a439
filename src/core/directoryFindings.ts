import { isPinLabel, normalizePrinted, pinLabelSet, type DuressRule } from './credentials.js';

/**
 * What a directory holds that weakens the doors, found in one pass over its credentials (issue 32 items 4 and 9):
 * - short cards: entries read as cards (label not in access.pinLabels) with fewer digits than access.minCardDigits,
 *   most likely PINs stored under another label ("Pin code"), which a reader that sends digits would open with;
 * - duress collisions: a PIN whose duress PIN (access.duressPin) is itself a PIN in the directory. Typing it opens
 *   as that PIN's holder and raises no alarm: the real PIN wins (see README, Door operations).
 * Never a number: counts, labels and holder ids only.
 */

/** The rules a scan applies (config access.pinLabels, duressPin, minCardDigits); plain data, it crosses threads. */
export interface DirectoryRules {
  pinLabels: readonly string[];
  duressPin: DuressRule;
  minCardDigits: number;
}

export interface CredentialEntry {
  /** Normalized digits, as the cache keeps them. */
  number: string;
  holderKind: 'user' | 'link';
  holderId: string;
  label: string | null;
}

export interface DirectoryFindings {
  /** Card entries with a colon that are no facility:card (`12:`, `1:2:3`): they match no read. Absent: none. */
  malformedPrinted?: { count: number; labels: string[] };
  shortCards: { count: number; minDigits: number; labels: string[] };
  /** null: access.duressPin is off (no duress PINs, nothing can collide). */
  duressCollisions: { count: number; emailIds: number[]; magicLinkIds: string[] } | null;
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

/** Scans entries one by one (a streamed query): memory grows with the PINs only. */
export class DirectoryScan {
  private readonly pinLabels: ReadonlySet<string>;
  private shortCount = 0;
  private malformedCount = 0;
  private readonly malformedLabels = new Set<string>();
  private readonly shortLabels = new Set<string>();
  /** PIN -> holder keys ("user:101", "link:501"). */
  private readonly pins = new Map<string, string[]>();

  constructor(private readonly rules: DirectoryRules) {
    this.pinLabels = pinLabelSet(rules.pinLabels);
  }

  add(entry: CredentialEntry): void {
    if (isPinLabel(entry.label, this.pinLabels)) {
      if (this.rules.duressPin === 'off') return;
      const key = `${entry.holderKind}:${entry.holderId}`;
      const holders = this.pins.get(entry.number);
      if (holders) holders.push(key);
      else this.pins.set(entry.number, [key]);
    } else if (entry.number.includes(':') && normalizePrinted(entry.number) !== entry.number) {
      this.malformedCount++;
      this.malformedLabels.add(entry.label?.trim() || NO_LABEL);
    } else if (entry.number.length < this.rules.minCardDigits) {
      this.shortCount++;
      this.shortLabels.add(entry.label?.trim() || NO_LABEL);
    }
  }

  result(): DirectoryFindings {
    const labels = [...this.shortLabels].sort().slice(0, MAX_LISTED);
    return {
      ...(this.malformedCount > 0 ? { malformedPrinted: { count: this.malformedCount, labels: [...this.malformedLabels].sort().slice(0, MAX_LISTED) } } : {}),
      shortCards: { count: this.shortCount, minDigits: this.rules.minCardDigits, labels },
      duressCollisions: this.rules.duressPin === 'off' ? null : this.collisions(),
    };
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
    const ids = (kind: string) => [...involved].filter((k) => k.startsWith(`${kind}:`)).map((k) => k.slice(kind.length + 1));
    return {
      count,
      emailIds: ids('user')
        .map(Number)
        .sort((a, b) => a - b),
      magicLinkIds: ids('link').sort(),
    };
  }
}

/** A stable key of the collision set, to tell whether it changed since the last report. */
export function collisionKey(findings: DirectoryFindings): string {
  const c = findings.duressCollisions;
  return c === null || c.count === 0 ? '' : JSON.stringify([c.count, c.emailIds, c.magicLinkIds]);
}

const listed = (items: ReadonlyArray<string | number>) =>
  items.slice(0, MAX_LISTED).join(', ') + (items.length > MAX_LISTED ? ` and ${items.length - MAX_LISTED} more` : '');

/** The findings as warnings for people (import, sync, status, config check); empty when there is nothing to say. */
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
  const c = findings.duressCollisions;
  if (c && c.count > 0) {
    const who = [...c.emailIds.map((id) => `email_id ${id}`), ...c.magicLinkIds.map((id) => `guest link ${id}`)];
    lines.push(
      `${c.count} duress PIN ${c.count === 1 ? 'collision' : 'collisions'} (${listed(who)}): a duress PIN that is also a PIN ` +
        "in the directory opens as that PIN's holder with no alarm (the real PIN wins). Change one of the PINs",
    );
  }
  return lines;
}
