import { describe, it, expect } from 'vitest';
import {
  credentialHint,
  isWellFormedToken,
  normalizeCardNumber,
  normalizeCredential,
  normalizePin,
  normalizeStoredNumber,
  stripLeadingZeros,
} from '../../src/core/credentials.js';

describe('stripLeadingZeros', () => {
  it.each([
    ['000', '0'],
    ['0', '0'],
    ['007', '7'],
    ['100', '100'],
    ['0001000', '1000'],
  ])('%s -> %s', (input, expected) => {
    expect(stripLeadingZeros(input)).toBe(expected);
  });
});

describe('normalizeCardNumber (decimal)', () => {
  it.each([
    ['1234567890', '1234567890'],
    ['0001234567890', '1234567890'],
    ['000', '0'],
    ['0', '0'],
    ['9'.repeat(40), '9'.repeat(40)],
    // A number beyond 2^53 keeps every digit (no float rounding).
    ['00018446744073709551617', '18446744073709551617'],
  ])('%s -> %s', (raw, expected) => {
    expect(normalizeCardNumber(raw, 'decimal')).toBe(expected);
  });

  it.each([
    ['', 'empty'],
    [' 123', 'leading space'],
    ['123 ', 'trailing space'],
    ['12 34', 'inner space'],
    ['12a4', 'letter'],
    ['1A2B', 'hex digits on a decimal reader'],
    ['-12', 'sign'],
    ['+12', 'plus sign'],
    ['1.5', 'decimal point'],
    ['123\n', 'newline'],
    ['１２３', 'full-width digits'],
    ['1'.repeat(41), 'over 40 digits'],
  ])('rejects %j (%s)', (raw) => {
    expect(normalizeCardNumber(raw, 'decimal')).toBeNull();
  });
});

describe('normalizeCardNumber (hex)', () => {
  it.each([
    ['FF', '255'],
    ['ff', '255'],
    ['00ff', '255'],
    ['0', '0'],
    ['0000', '0'],
    ['DEADBEEF', '3735928559'],
    // 2^53 + 1: a Number would round it to 2^53.
    ['20000000000001', '9007199254740993'],
    ['FFFFFFFFFFFFFFFF', '18446744073709551615'],
    ['F'.repeat(32), (2n ** 128n - 1n).toString()],
  ])('%s -> %s', (raw, expected) => {
    expect(normalizeCardNumber(raw, 'hex')).toBe(expected);
  });

  it.each([
    ['', 'empty'],
    ['0xFF', '0x prefix'],
    ['FG', 'non-hex letter'],
    ['DE AD', 'inner space'],
    [' FF', 'leading space'],
    ['F'.repeat(33), 'over 32 hex digits'],
  ])('rejects %j (%s)', (raw) => {
    expect(normalizeCardNumber(raw, 'hex')).toBeNull();
  });
});

describe('normalizePin', () => {
  it.each([
    ['1234', '1234'],
    ['0042', '0042'], // a PIN is a string of digits: leading zeros count
    ['0000', '0000'],
    ['1'.repeat(16), '1'.repeat(16)],
  ])('%s -> %s', (raw, expected) => {
    expect(normalizePin(raw)).toBe(expected);
  });

  it.each([[''], ['12 34'], ['12a4'], ['#1234'], ['1234#'], ['1'.repeat(17)]])('rejects %j', (raw) => {
    expect(normalizePin(raw)).toBeNull();
  });

  it('0123 and 123 are different PINs (issue 32)', () => {
    expect(normalizePin('0123')).not.toBe(normalizePin('123'));
  });
});

describe('normalizeStoredNumber', () => {
  it('normalizes a stored number the same way as a presented card', () => {
    expect(normalizeStoredNumber('000123')).toBe('123');
    expect(normalizeStoredNumber('000123')).toBe(normalizeCardNumber('123', 'decimal'));
  });

  it.each([[''], ['12ab'], [' 12']])('rejects %j', (raw) => {
    expect(normalizeStoredNumber(raw)).toBeNull();
  });
});

describe('isWellFormedToken', () => {
  const printable = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('');

  it.each([
    ['a'.repeat(16), '16 characters (minimum)'],
    ['a'.repeat(128), '128 characters (maximum)'],
    ['Zk3_-~!@#$%^&*()[]{}', 'punctuation'],
    [printable.slice(0, 128), 'every printable non-space ASCII character'],
    [printable.slice(-64), 'the upper half of printable ASCII'],
  ])('accepts %j (%s)', (raw) => {
    expect(isWellFormedToken(raw)).toBe(true);
  });

  it.each([
    ['', 'empty'],
    ['a'.repeat(15), '15 characters'],
    ['a'.repeat(129), '129 characters'],
    ['abcdefgh ijklmnop', 'inner space'],
    ['abcdefghijklmnop\t', 'tab'],
    ['abcdefghijklmnop\r', 'carriage return'],
    ['abcdefghijklmnopé', 'non-ASCII'],
    ['abcdefghijklmno\x7f', 'DEL'],
    ['abcdefghijklmno\x00', 'NUL'],
  ])('rejects %j (%s)', (raw) => {
    expect(isWellFormedToken(raw)).toBe(false);
  });
});

describe('normalizeCredential', () => {
  it('dispatches by kind and format', () => {
    expect(normalizeCredential('00255', 'card')).toBe('255');
    expect(normalizeCredential('00FF', 'card', 'hex')).toBe('255');
    expect(normalizeCredential('0042', 'pin')).toBe('0042');
    expect(normalizeCredential('0123456789abcdef', 'token')).toBe('0123456789abcdef');
  });

  it('keeps a token verbatim (leading zeros are not stripped)', () => {
    expect(normalizeCredential('0000000000000000', 'token')).toBe('0000000000000000');
  });

  it('returns null for a credential malformed for its kind', () => {
    expect(normalizeCredential('FF', 'card')).toBeNull();
    expect(normalizeCredential('12#', 'pin')).toBeNull();
    expect(normalizeCredential('short', 'token')).toBeNull();
  });
});

describe('credentialHint', () => {
  it.each([
    ['12345678', '…5678'],
    ['1234567890', '…7890'],
    ['18446744073709551617', '…1617'],
    ['1234567', '…67'],
    ['123456', '…56'],
    // Shorter numbers may be PINs presented as cards: nothing of them is shown.
    ['12345', '…'],
    ['1234', '…'],
    ['7', '…'],
  ])('card %s -> %s', (number, expected) => {
    expect(credentialHint(number, 'card')).toBe(expected);
  });

  it('never contains a whole card number of any length', () => {
    for (let len = 1; len <= 40; len++) {
      const number = '9876543210'.repeat(4).slice(0, len);
      const hint = credentialHint(number, 'card');
      expect(hint.replace('…', '').length).toBeLessThan(len);
      expect(hint.replace('…', '').length).toBeLessThanOrEqual(4);
      expect(number.endsWith(hint.replace('…', ''))).toBe(true);
    }
  });

  it('shows nothing of a PIN or a token', () => {
    expect(credentialHint('4711', 'pin')).toBe('PIN');
    expect(credentialHint('12345678', 'pin')).toBe('PIN');
    const token = 'QRtoken-0123456789-abcdef';
    const hint = credentialHint(token, 'token');
    expect(hint).toBe('token');
    expect(hint).not.toContain('abcdef');
  });
});

describe('printed card numbers', () => {
  it('facility:card is normalized like a number (leading zeros dropped in both parts) and masked in its card part', async () => {
    const { normalizeCardNumber, normalizeStoredNumber, credentialHint } = await import('../../src/core/credentials.js');
    expect(normalizeCardNumber('0123:045678', 'decimal')).toBe('123:45678');
    expect(normalizeStoredNumber('123:45678')).toBe('123:45678');
    expect(normalizeStoredNumber('12:')).toBeNull();
    expect(normalizeCardNumber('123:45678', 'hex')).toBeNull();
    expect(credentialHint('123:12345678', 'card')).toBe('123:…5678');
  });
});
