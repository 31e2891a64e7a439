import { describe, expect, it } from 'vitest';
import { AddressAllowList, parseNetwork, refusedClass, resolveReceiver } from '../../src/service/audit/webhookAddress.js';

// The webhooks' guard against server-side request forgery (docs/audit.md, "Webhooks"): which addresses a receiver
// may not be at, what server.webhooks.allowAddresses lets through, and a host refused when any of its addresses is.

describe('the addresses a webhook receiver may not be at', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.0.9', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['10.1.2.3', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.1.10', 'a private address'],
    ['169.254.169.254', 'a link-local address'],
    ['fe80::1', 'a link-local address'],
    ['febf::1', 'a link-local address'],
    ['fc00::1', 'a unique-local address'],
    ['fdab:1234::9', 'a unique-local address'],
    ['100.64.0.1', 'a shared (carrier-grade NAT) address'],
    ['100.127.255.254', 'a shared (carrier-grade NAT) address'],
    ['224.0.0.251', 'a multicast address'],
    ['ff02::fb', 'a multicast address'],
    ['0.0.0.0', 'an unspecified address'],
    ['::', 'an unspecified address'],
    ['255.255.255.255', 'a reserved or broadcast address'],
    // IPv4-mapped IPv6, dotted and in hex, and NAT64's prefix: the IPv4 address inside is the one reached.
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:7f00:1', 'a loopback address'],
    ['::ffff:10.0.0.5', 'a private address'],
    ['::ffff:169.254.169.254', 'a link-local address'],
    ['64:ff9b::192.168.0.1', 'a private address'],
  ])('%s is %s', (address, words) => {
    expect(refusedClass(address)).toBe(words);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '172.15.255.255', '100.128.0.1', '169.255.0.1', '2606:4700::1111', '::ffff:8.8.8.8', 'fec0::1'])(
    '%s is a public address',
    (address) => {
      expect(refusedClass(address)).toBeNull();
    },
  );

  it('lets through only what server.webhooks.allowAddresses lists, IPv4 networks covering their IPv4-mapped form', () => {
    const allow = new AddressAllowList(['127.0.0.1/32', '10.20.0.0/16', 'fd00::/8']);
    expect(allow.refusal('127.0.0.1')).toBeNull();
    expect(allow.refusal('::ffff:127.0.0.1')).toBeNull();
    expect(allow.refusal('127.0.0.2')).toBe('a loopback address');
    expect(allow.refusal('10.20.99.1')).toBeNull();
    expect(allow.refusal('10.21.0.1')).toMatch(/a private address/);
    expect(allow.refusal('fd12::1')).toBeNull();
    expect(allow.refusal('fc12::1')).toMatch(/a unique-local address/);
    expect(allow.refusal('::1')).toMatch(/a loopback address/);
    expect(allow.refusal('8.8.8.8')).toBeNull();
    expect(parseNetwork('10.0.0.0/33')).toBeNull();
    expect(parseNetwork('not-an-address')).toBeNull();
  });

  it('refuses a host when any address it resolves to is refused, and names the host and the address', async () => {
    const allow = new AddressAllowList([]);
    const rebinding = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    expect(await resolveReceiver('hooks.example.org', allow, rebinding)).toEqual({
      refused: 'refused: hooks.example.org resolves to 127.0.0.1, a loopback address, which server.webhooks.allowAddresses does not list',
    });
    const publicOnly = async () => [
      { address: '2606:4700::1111', family: 6 },
      { address: '93.184.215.14', family: 4 },
    ];
    expect(await resolveReceiver('hooks.example.org', allow, publicOnly)).toEqual({ address: '2606:4700::1111', family: 6 });
    // A literal address is checked as it is, without a lookup.
    expect(await resolveReceiver('[::1]', allow, () => Promise.reject(new Error('no lookup for a literal')))).toEqual({
      refused: 'refused: ::1 is a loopback address, which server.webhooks.allowAddresses does not list',
    });
    const nowhere = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));
    expect(await resolveReceiver('nowhere.invalid', allow, nowhere)).toEqual({ refused: 'nowhere.invalid does not resolve (ENOTFOUND)' });
  });
});
