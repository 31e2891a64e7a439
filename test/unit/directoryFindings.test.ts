import { describe, expect, it } from 'vitest';
import { duressOriginal } from '../../src/core/credentials.js';
import {
  DirectoryScan,
  collisionKey,
  directoryRules,
  duressPinOf,
  findingsWarnings,
  type CredentialEntry,
  type DirectoryRules,
} from '../../src/core/directoryFindings.js';
import { BUILTIN_FORMATS, formatsFor } from '../../src/core/wiegandFormats.js';

const RULES: DirectoryRules = { pinLabels: ['PIN'], duressPin: 'lastDigitPlusOne', minCardDigits: 6 };
const pin = (holderId: string, number: string, holderKind: 'user' | 'link' = 'user'): CredentialEntry => ({ number, holderKind, holderId, label: 'PIN' });
const card = (holderId: string, number: string, label: string | null = 'badge'): CredentialEntry => ({ number, holderKind: 'user', holderId, label });

function scan(entries: CredentialEntry[], rules: DirectoryRules = RULES) {
  const s = new DirectoryScan(rules);
  for (const e of entries) s.add(e);
  return s.result();
}

describe('duressPinOf: the PIN typed under duress', () => {
  it.each([
    ['1357', 'lastDigitPlusOne', '1358'],
    ['2469', 'lastDigitPlusOne', '2460'],
    ['1230', 'lastDigitMinusOne', '1239'],
    ['1234', 'off', null],
  ] as const)('%s with %s is %s', (p, rule, expected) => {
    expect(duressPinOf(p, rule)).toBe(expected);
  });

  it('is what the door undoes (duressOriginal)', () => {
    for (const rule of ['lastDigitPlusOne', 'lastDigitMinusOne'] as const) {
      for (const p of ['1234', '0000', '9999', '98765', '10']) expect(duressOriginal(duressPinOf(p, rule)!, rule)).toBe(p);
    }
  });
});

describe('duress collisions', () => {
  it("1357 -> 1358 while 1358 is Zoe's own PIN: one collision, both users named, no PIN anywhere", () => {
    const found = scan([pin('101', '1357'), pin('107', '1358'), pin('102', '2222'), card('101', '4213578')]);
    expect(found.duressCollisions).toEqual({ count: 1, emailIds: [101, 107], magicLinkIds: [] });
    const text = findingsWarnings(found).join('\n');
    expect(text).toMatch(/^1 duress PIN collision \(email_id 101, email_id 107\)/);
    expect(text).toContain('the real PIN wins');
    expect(text).not.toMatch(/1357|1358/);
  });

  it('follows the configured rule: minus one, and 9 + 1 wrapping to 0', () => {
    expect(scan([pin('1', '1358'), pin('2', '1357')], { ...RULES, duressPin: 'lastDigitMinusOne' }).duressCollisions?.emailIds).toEqual([1, 2]);
    expect(scan([pin('1', '2469'), pin('2', '2460')]).duressCollisions?.count).toBe(1);
    expect(scan([pin('1', '2469'), pin('2', '2470')]).duressCollisions?.count).toBe(0);
  });

  it('a chain counts each duress PIN that someone holds; a second PIN of the same user counts; guest links are named', () => {
    expect(scan([pin('1', '1000'), pin('2', '1001'), pin('3', '1002')]).duressCollisions).toEqual({ count: 2, emailIds: [1, 2, 3], magicLinkIds: [] });
    expect(scan([pin('1', '4440'), pin('1', '4441')]).duressCollisions).toEqual({ count: 1, emailIds: [1], magicLinkIds: [] });
    expect(scan([pin('1', '5550'), pin('501', '5551', 'link')]).duressCollisions).toEqual({ count: 1, emailIds: [1], magicLinkIds: ['501'] });
  });

  it('cards never collide with PINs (a card number is not typed on the keypad), and duressPin off finds nothing', () => {
    expect(scan([pin('1', '1357'), card('2', '1358')]).duressCollisions?.count).toBe(0);
    expect(scan([pin('1', '1357'), pin('2', '1358')], { ...RULES, duressPin: 'off' }).duressCollisions).toBeNull();
  });

  it('the key changes with the set of collisions, and is empty without any', () => {
    const one = scan([pin('1', '1357'), pin('2', '1358')]);
    const other = scan([pin('1', '1357'), pin('3', '1358')]);
    expect(collisionKey(one)).not.toBe(collisionKey(other));
    expect(collisionKey(scan([pin('1', '1357')]))).toBe('');
    expect(collisionKey(scan([pin('1', '1357'), pin('2', '1358')], { ...RULES, duressPin: 'off' }))).toBe('');
  });
});

describe('short cards (likely PINs under another label)', () => {
  it('counts card entries under minCardDigits and names their labels, never their numbers', () => {
    const found = scan([card('1', '1234', 'Pin code'), card('2', '98765', 'Pin code'), card('3', '4213578'), card('4', '42', null), pin('5', '1111')]);
    expect(found.shortCards).toEqual({ count: 3, minDigits: 6, labels: ['(no label)', 'Pin code'] });
    const text = findingsWarnings(found).join('\n');
    expect(text).toMatch(/^3 card entries have fewer than 6 digits \(labels: "\(no label\)", "Pin code"\)/);
    expect(text).not.toMatch(/1234|98765|42\b/);
  });

  it('an entry with a PIN label is a PIN, whatever its length; a clean directory says nothing', () => {
    const found = scan([pin('1', '12'), card('2', '123456')]);
    expect(found.shortCards.count).toBe(0);
    expect(findingsWarnings(found)).toEqual([]);
  });
});

describe('short PINs (never accepted), counted in the same pass', () => {
  it('counts PIN entries under minPinLength by their digits as typed (leading zeros count), with duressPin off too', () => {
    const entries = [
      pin('1', '123'),
      // 0123 is kept as 123 with its digits apart: four digits, long enough.
      { ...pin('2', '123'), digits: '0123' },
      pin('3', '12345'),
      card('4', '12'),
      { ...pin('5', '99', 'link'), digits: null },
    ];
    for (const duressPin of ['lastDigitPlusOne', 'off'] as const) {
      const found = scan(entries, { ...RULES, duressPin, minPinLength: 4 });
      expect(found.shortPins).toEqual({ count: 2, minLength: 4 });
      expect(findingsWarnings(found).at(-1)).toBe('2 PINs shorter than 4 digits are never accepted (access.minPinLength)');
    }
    // Without minPinLength in the rules nothing is counted, and none at all says nothing.
    expect(scan(entries).shortPins).toBeUndefined();
    expect(findingsWarnings(scan([pin('3', '12345')], { ...RULES, minPinLength: 4 }))).toEqual([]);
  });

  it("the site's rules carry access.minPinLength", () => {
    expect(directoryRules({ ...RULES, minPinLength: 6 }, []).minPinLength).toBe(6);
    expect('minPinLength' in directoryRules(RULES, [])).toBe(false);
  });
});

describe('printed card numbers (facility:card)', () => {
  it('a malformed facility:card is a finding, never a crash; a well-formed one is a card like any other', () => {
    const findings = scan([card('101', '123:45678'), card('102', '12:'), card('103', '1:2:3', null)]);
    expect(findings.malformedPrinted).toEqual({ count: 2, labels: ['(no label)', 'badge'] });
    expect(findings.shortCards.count).toBe(0);
    expect(findingsWarnings(findings)[0]).toContain('2 card entries are neither a number nor facility:card');
  });

  // 123:45678 on an H10301 reader: data 123 * 65536 + 45678 = 8106606 (also facility_card's number).
  const H10301 = BUILTIN_FORMATS.filter((f) => f.name === 'H10301');
  const DATA_26: DirectoryRules = { ...RULES, cardReads: [{ numbering: 'data', formats: H10301 }] };

  it("one user's 123:45678 and another's 8106606 are one card on a 26-bit reader: a finding naming both holders, never the number", () => {
    const found = scan([card('101', '123:45678'), card('102', '8106606'), card('103', '4213578')], DATA_26);
    expect(found.ambiguousCards).toEqual({ count: 1, emailIds: [101, 102], magicLinkIds: [], numberings: ['data'] });
    const text = findingsWarnings(found).join('\n');
    expect(text).toContain(
      '1 card is in the directory both as printed (facility:card) and as the number it reads as (numbering data), for different holders (email_id 101, email_id 102)',
    );
    expect(text).toContain('card_ambiguous');
    expect(text).not.toMatch(/45678|8106606/);
  });

  it('the same holder on both sides, a number the readers never produce, or printed numbering: nothing', () => {
    expect(scan([card('101', '123:45678'), card('101', '8106606')], DATA_26).ambiguousCards).toBeUndefined();
    // On a C1k35 reader 123:45678 reads as 123 * 2^20 + 45678, not 8106606.
    const c1k35 = BUILTIN_FORMATS.filter((f) => f.name === 'C1k35');
    expect(
      scan([card('101', '123:45678'), card('102', '8106606')], { ...RULES, cardReads: [{ numbering: 'data', formats: c1k35 }] }).ambiguousCards,
    ).toBeUndefined();
    expect(
      scan([card('101', '123:45678'), card('102', String(123 * 2 ** 20 + 45678))], { ...RULES, cardReads: [{ numbering: 'data', formats: c1k35 }] })
        .ambiguousCards?.count,
    ).toBe(1);
    expect(
      scan([card('101', '123:45678'), card('102', '8106606')], { ...RULES, cardReads: [{ numbering: 'printed', formats: H10301 }] }).ambiguousCards,
    ).toBeUndefined();
    expect(scan([card('101', '123:45678'), card('102', '8106606')], RULES).ambiguousCards).toBeUndefined();
  });

  it("the rules take each Wiegand and OSDP reader's numbering and formats once; other readers have none", () => {
    const wiegand = { type: 'wiegand', numbering: 'facility_card', formats: H10301 };
    const rules = directoryRules(RULES, [
      { reader: wiegand, exitReader: { ...wiegand } },
      { reader: { type: 'serial' } },
      { reader: { type: 'osdp', numbering: 'data', formats: formatsFor('auto', []) } },
    ]);
    expect(rules.cardReads?.map((r) => [r.numbering, r.formats.length])).toEqual([
      ['facility_card', 1],
      ['data', BUILTIN_FORMATS.length],
    ]);
    // facility_card: 123:45678 is 8106606 too; a guest link is named as such.
    const found = scan([card('101', '123:45678'), { number: '8106606', holderKind: 'link', holderId: '501', label: null }], rules);
    expect(found.ambiguousCards).toEqual({ count: 1, emailIds: [101], magicLinkIds: ['501'], numberings: ['data', 'facility_card'] });
  });

  it('a directory of 250,000 cards, half printed, is scanned in one pass (no card compared with every other)', () => {
    const s = new DirectoryScan({ ...RULES, cardReads: [{ numbering: 'data', formats: formatsFor('auto', []) }] });
    const started = performance.now();
    for (let i = 0; i < 250_000; i++) {
      s.add(card(String(i), i % 2 === 0 ? `${i % 200}:${i}` : String(10_000_000 + i)));
    }
    expect(s.result().ambiguousCards).toBeUndefined();
    // Generous: a quadratic scan would take hours; this takes about a second on a Pi-class core.
    expect(performance.now() - started).toBeLessThan(20_000);
  });
});
