import type { LdapDisabledRule } from '../../options.js';
import { type LdapGroup, type LdapPerson, LdapReadError } from './ldapEntries.js';
import { isBinaryAttribute, type LdapMapping } from './presets.js';

/**
 * One search entry read through the mapping (presets.ts) into the sync's plain records. Pure. An entry as ldapts
 * gives it: its DN and each attribute's value or values, text or bytes, keyed by the name as the server spelled it.
 */
export interface RawEntry {
  dn: string;
  [attribute: string]: string | string[] | Buffer | Buffer[];
}

type Value = string | Buffer;

/** Each attribute's values by its name in lower case (LDAP's names are case-blind; servers spell them their way). */
function valuesByName(entry: RawEntry): Map<string, Value[]> {
  const byName = new Map<string, Value[]>();
  for (const [name, raw] of Object.entries(entry)) {
    if (name === 'dn') continue;
    const values: Value[] = Array.isArray(raw) ? raw : [raw];
    const key = name.toLowerCase();
    byName.set(key, [...(byName.get(key) ?? []), ...values]);
  }
  return byName;
}

const asText = (value: Value): string => (typeof value === 'string' ? value : value.toString('utf8'));

/** The attribute's values as text, blanks left out. */
function texts(values: Map<string, Value[]>, name: string): string[] {
  return (values.get(name.toLowerCase()) ?? []).map((v) => asText(v).trim()).filter((v) => v !== '');
}

/** A multi-valued attribute's first value; null when it has none. */
function first(values: Map<string, Value[]>, name: string): string | null {
  return texts(values, name)[0] ?? null;
}

/** The id: a binary attribute's bytes as lower-case hex, else its text. A missing id stops the read (see below). */
function idOf(entry: RawEntry, values: Map<string, Value[]>, attribute: string, what: string): string {
  const value = (values.get(attribute.toLowerCase()) ?? [])[0];
  const binary = isBinaryAttribute(attribute);
  // A binary id read as text has lost bytes on the way (not UTF-8): its hex would differ at each read, and every user
  // would be new at one sync and gone at the next.
  if (binary && value !== undefined && !Buffer.isBuffer(value)) {
    throw new LdapReadError(`${what} ${entry.dn}: its ${attribute} (attributes.id) arrived as text, not bytes: it cannot be read as an id`);
  }
  const id = value === undefined ? '' : binary ? (value as Buffer).toString('hex') : asText(value).trim();
  // Without its id an entry could be neither matched nor told apart from one gone: the sync would suspend its user.
  if (id === '') {
    throw new LdapReadError(
      `${what} ${entry.dn} has no ${attribute} (attributes.id): every entry the ${what}s' filter matches needs one; choose another attributes.id or narrow the filter`,
    );
  }
  return id;
}

/**
 * Whether the entry is disabled by the rule: a flag of an integer, one of the listed values, or the attribute present.
 * A flag's attribute missing stops the read: the bind account may not be allowed to read it, and "enabled" would
 * then let every disabled account in.
 */
function isDisabled(rule: LdapDisabledRule | null, values: Map<string, Value[]>, dn: string): boolean {
  if (rule === null) return false;
  const found = texts(values, rule.attribute);
  if (rule.mask !== undefined) {
    const mask = rule.mask;
    if (found.length === 0) {
      throw new LdapReadError(`cannot tell whether user ${dn} is disabled: it has no ${rule.attribute} (can the bind account read it?)`);
    }
    return found.some((v) => /^-?\d+$/.test(v) && (BigInt(v) & BigInt(mask)) !== 0n);
  }
  if (rule.values !== undefined) {
    const listed = new Set(rule.values.map((v) => v.toLowerCase()));
    return found.some((v) => listed.has(v.toLowerCase()));
  }
  return found.length > 0;
}

export function personFromEntry(entry: RawEntry, m: LdapMapping): LdapPerson {
  const values = valuesByName(entry);
  const email = m.email.map((name) => first(values, name)).find((v) => v !== null) ?? null;
  const lowered = email === null ? null : email.toLowerCase();
  return {
    id: idOf(entry, values, m.id, 'user'),
    dn: entry.dn,
    email: lowered,
    firstName: first(values, m.firstName) ?? '',
    lastName: first(values, m.lastName) ?? '',
    username: first(values, m.username) ?? lowered?.split('@')[0] ?? '',
    disabled: isDisabled(m.disabled, values, entry.dn),
    memberOf: m.membership === 'memberOf' ? texts(values, 'memberOf') : [],
    card: m.card === null ? null : first(values, m.card),
    pin: m.pin === null ? null : first(values, m.pin),
  };
}

export function groupFromEntry(entry: RawEntry, m: LdapMapping): LdapGroup {
  const values = valuesByName(entry);
  return {
    id: idOf(entry, values, m.id, 'group'),
    dn: entry.dn,
    // A group without the name attribute is named by its DN's first value (cn=Doors,... -> Doors).
    name: first(values, m.groupName) ?? rdnValue(entry.dn),
    members: m.membership === 'member' ? texts(values, 'member') : [],
  };
}

function rdnValue(dn: string): string {
  const rdn = dn.split(',')[0] ?? dn;
  return rdn.slice(rdn.indexOf('=') + 1).trim();
}
