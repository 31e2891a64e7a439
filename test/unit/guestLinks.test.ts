import { describe, expect, it } from 'vitest';
import { guestLinkPayload, guestLinkRevocationPayload, parseGuestLinkMessage } from '../../src/protocol/guestLinks.js';
import { canonicalJson } from '../../src/protocol/signing.js';

const SECRET = 'guest-link-secret';
const LINK = {
  magic_link_id: '77',
  magic_token: 'token-0123456789abcdef',
  name: 'Visitor',
  resource_id_list: [12],
  smartcards: [{ number: '5551234', label: 'visitor' }],
};
const parse = (payload: string, secret: string | null = SECRET, id = '77') => parseGuestLinkMessage(id, Buffer.from(payload), secret);

describe('guest link messages', () => {
  it('canonical JSON sorts keys at every level and drops undefined, as the signature requires', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: null, y: 'é' }], c: undefined } })).toBe('{"a":{"d":[3,{"y":"é","z":null}]},"b":1}');
  });

  it('a link signed by the service is accepted, with its issued_at; re-ordered keys still verify', () => {
    const payload = guestLinkPayload(LINK, SECRET, 1_800_000_000);
    expect(parse(payload)).toMatchObject({ kind: 'link', issuedAt: 1_800_000_000, link: { magic_link_id: '77' } });
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(payload) as object).reverse()));
    expect(parse(reordered)).toMatchObject({ kind: 'link' });
  });

  it('refuses unsigned, forged, tampered and mis-addressed messages in signed mode', () => {
    expect(parse(JSON.stringify(LINK))).toEqual({ refused: 'unsigned: issued_at and signature are required here' });
    expect(parse(guestLinkPayload(LINK, 'wrong', 1))).toEqual({ refused: 'signature does not match' });
    const tampered = JSON.parse(guestLinkPayload(LINK, SECRET, 1)) as Record<string, unknown>;
    tampered.smartcards = [{ number: '1111', label: 'attacker' }];
    expect(parse(JSON.stringify(tampered))).toEqual({ refused: 'signature does not match' });
    expect(parse(guestLinkPayload(LINK, SECRET, 1), SECRET, '78')).toEqual({ refused: 'magic_link_id does not match its topic' });
    expect(parse('')).toMatchObject({ refused: expect.stringContaining('revocations must be signed') });
  });

  it('a signed tombstone revokes; unsigned mode takes plain links and the empty payload', () => {
    expect(parse(guestLinkRevocationPayload('77', SECRET, 5))).toEqual({ kind: 'revoke', issuedAt: 5 });
    expect(guestLinkRevocationPayload('77', null, 5)).toBe('');
    expect(parse('', null)).toEqual({ kind: 'revoke', issuedAt: null });
    expect(parse(JSON.stringify(LINK), null)).toMatchObject({ kind: 'link', issuedAt: null });
  });

  it('refuses more than 16 KiB in any mode, and what is not a JSON object', () => {
    expect(parse(JSON.stringify({ ...LINK, name: 'x'.repeat(16 * 1024) }), null)).toMatchObject({ refused: expect.stringContaining('more than 16384') });
    expect(parse('[1,2]', null)).toEqual({ refused: 'not a JSON object' });
    expect(parse('{', null)).toEqual({ refused: 'not JSON' });
  });
});
