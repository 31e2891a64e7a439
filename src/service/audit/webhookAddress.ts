import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/**
 * The webhooks' guard against server-side request forgery (docs/audit.md, "Webhooks"): the addresses a receiver
 * may not be at (loopback, private, link-local, ...) unless server.webhooks.allowAddresses lists them, checked on
 * every address a host resolves to at each delivery. The sender then connects to the address checked, so a second
 * DNS answer cannot move it between the check and the connection.
 */

/** `text` (IPv4 or IPv6, no brackets; a zone is dropped) as 16 bytes, IPv4 as IPv4-mapped IPv6; null when it is no address. */
function toBytes(text: string): Uint8Array | null {
  const bare = text.replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...bare.split('.').map(Number)]);
  if (family !== 6) return null;
  // A dotted IPv4 tail (::ffff:127.0.0.1) stands for the last two groups.
  const lastColon = bare.lastIndexOf(':');
  const tail = bare.slice(lastColon + 1);
  let hex = bare;
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    hex = `${bare.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left = '', right] = hex.split('::');
  const leftGroups = left === '' ? [] : left.split(':');
  const rightGroups = right === undefined || right === '' ? [] : right.split(':');
  const fill = right === undefined ? 0 : 8 - leftGroups.length - rightGroups.length;
  const groups = [...leftGroups, ...Array<string>(fill).fill('0'), ...rightGroups];
  if (groups.length !== 8) return null;
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    bytes[i * 2] = n >> 8;
    bytes[i * 2 + 1] = n & 0xff;
  });
  return bytes;
}

/** A network: its first address's bytes and how many leading bits count (of the 16-byte form). */
interface Network {
  bytes: Uint8Array;
  bits: number;
}

/** `A.B.C.D/N` or `X::Y/N` (a bare address: that address alone) as a network of the 16-byte form. @internal */
export function parseNetwork(cidr: string): Network | null {
  const [address = '', bits] = cidr.split('/');
  const bytes = toBytes(address);
  if (bytes === null) return null;
  const v4 = isIP(address) === 4;
  const length = bits === undefined ? (v4 ? 32 : 128) : /^\d{1,3}$/.test(bits) ? Number(bits) : -1;
  if (length < 0 || length > (v4 ? 32 : 128)) return null;
  return { bytes, bits: v4 ? length + 96 : length };
}

function inNetwork(bytes: Uint8Array, network: Network): boolean {
  for (let bit = 0; bit < network.bits; bit += 8) {
    const take = Math.min(8, network.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[bit / 8]! & mask) !== (network.bytes[bit / 8]! & mask)) return false;
  }
  return true;
}

/** The ranges refused, each with its name in words. IPv4 ones cover the IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) too. */
const REFUSED: ReadonlyArray<[string, string]> = [
  ['0.0.0.0/8', 'an unspecified address'],
  ['127.0.0.0/8', 'a loopback address'],
  ['10.0.0.0/8', 'a private address'],
  ['172.16.0.0/12', 'a private address'],
  ['192.168.0.0/16', 'a private address'],
  ['100.64.0.0/10', 'a shared (carrier-grade NAT) address'],
  ['169.254.0.0/16', 'a link-local address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved or broadcast address'],
  ['::/128', 'an unspecified address'],
  ['::1/128', 'a loopback address'],
  ['fe80::/10', 'a link-local address'],
  ['fc00::/7', 'a unique-local address'],
  ['ff00::/8', 'a multicast address'],
];
const REFUSED_NETWORKS = REFUSED.map(([cidr, words]) => ({ network: parseNetwork(cidr)!, words }));
/** NAT64's well-known prefix (RFC 6052): the IPv4 address in its last 32 bits is the one reached. */
const NAT64 = parseNetwork('64:ff9b::/96')!;

/** What class of refused address `address` is ("a loopback address"), or null for a public one. Not an address: null. */
export function refusedClass(address: string): string | null {
  let bytes = toBytes(address);
  if (bytes === null) return null;
  if (inNetwork(bytes, NAT64)) bytes = Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...bytes.subarray(12)]);
  return REFUSED_NETWORKS.find((r) => inNetwork(bytes, r.network))?.words ?? null;
}

/** server.webhooks.allowAddresses: the networks a receiver may be at although refusedClass names them. */
export class AddressAllowList {
  private readonly networks: Network[];

  constructor(cidrs: readonly string[]) {
    this.networks = cidrs.map((cidr) => {
      const network = parseNetwork(cidr);
      if (network === null) throw new Error(`server.webhooks.allowAddresses: ${cidr} is no address or network`);
      return network;
    });
  }

  allows(address: string): boolean {
    const bytes = toBytes(address);
    return bytes !== null && this.networks.some((n) => inNetwork(bytes, n));
  }

  /** What refused class `address` is of ("a loopback address"); null when it may be used. */
  refusal(address: string): string | null {
    const words = refusedClass(address);
    return words === null || this.allows(address) ? null : words;
  }
}

/** A receiver's host resolved, and the address to connect to; or why not. */
export type Resolution = { address: string; family: 4 | 6 } | { refused: string };

/** How a host name is resolved: node:dns's lookup with all: true (the system's resolver, as any client uses it). */
export type HostLookup = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemLookup: HostLookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/**
 * Resolves `host` (a URL's hostname, an IPv6 one in brackets) and checks every address it has: one refused refuses
 * the host (a name that also points inside cannot be used to reach inside). The first address is the one to use.
 */
export async function resolveReceiver(host: string, allow: AddressAllowList, lookup: HostLookup = systemLookup): Promise<Resolution> {
  const bare = host.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = isIP(bare) === 0 ? await lookup(bare) : [{ address: bare, family: isIP(bare) }];
  } catch (err) {
    return { refused: `${bare} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  if (addresses.length === 0) return { refused: `${bare} does not resolve (no address)` };
  for (const { address } of addresses) {
    const refusal = allow.refusal(address);
    if (refusal === null) continue;
    const what = bare === address ? `${address} is ${refusal}` : `${bare} resolves to ${address}, ${refusal}`;
    return { refused: `refused: ${what}, which server.webhooks.allowAddresses does not list` };
  }
  const first = addresses[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
