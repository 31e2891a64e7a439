import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { isLoopbackHost } from './loopbackHost.js';

/**
 * Where the service takes its people from (docs/identity-sources.md): `server.identity.scim`, an identity provider
 * pushing over SCIM 2.0, and `server.identity.ldap`, an LDAP server or Active Directory read on a schedule.
 */

/** What every LDAP attribute name may be (RFC 4512 descriptor, or an OID). */
const attributeName = z
  .string()
  .regex(/^([A-Za-z][A-Za-z0-9-]{0,127}|\d+(\.\d+)+)$/, 'an LDAP attribute name (letters, digits and "-", starting with a letter)');

/** An LDAP search filter: parenthesised, balanced (the server says more; this catches a filter pasted without them). */
const ldapFilter = z
  .string()
  .max(4096)
  .refine((f) => {
    if (!f.startsWith('(') || !f.endsWith(')')) return false;
    let depth = 0;
    for (const c of f) {
      if (c === '(') depth++;
      else if (c === ')' && --depth < 0) return false;
    }
    return depth === 0;
  }, 'an LDAP filter in parentheses, balanced: (objectClass=user)');

/** A DN: attribute=value pairs separated by commas (at least one). */
const dn = z
  .string()
  .min(3)
  .max(2048)
  .regex(/^[A-Za-z][A-Za-z0-9-]*=[^,]+(,\s*[A-Za-z][A-Za-z0-9-]*=[^,]+)*$/, 'a DN: OU=Staff,DC=example,DC=org');

/**
 * When an entry is disabled: a flag of an integer attribute (`{attribute: userAccountControl, mask: 2}`), one of
 * listed values (case-blind), or, with neither, the attribute being present (`pwdAccountLockedTime`).
 */
const disabledRule = z
  .strictObject({
    attribute: attributeName,
    /** The value of the flag (2: ACCOUNTDISABLE), set when `value & mask` is not 0. */
    mask: wholeNumber()
      .min(1)
      .max(2 ** 31)
      .optional(),
    values: z.array(z.string().min(1)).min(1).optional(),
  })
  .refine((rule) => rule.mask === undefined || rule.values === undefined, 'give mask or values, not both');

/** Overrides of the preset's attribute mapping (docs/identity-sources.md, "The presets"). */
const ldapAttributes = z.strictObject({
  /** Stable across renames and moves: entryUUID, objectGUID. */
  id: attributeName.optional(),
  email: attributeName.optional(),
  firstName: attributeName.optional(),
  lastName: attributeName.optional(),
  username: attributeName.optional(),
  disabled: disabledRule.optional(),
  /** `member`: the group's member attribute lists users' DNs; `memberOf`: the user's lists the groups' DNs. */
  membership: z.enum(['member', 'memberOf']).optional(),
  /** The name of a group (cn). */
  groupName: attributeName.optional(),
  /** A card number held in the user's entry; absent: cards stay at the service. */
  card: attributeName.optional(),
  /** A PIN held in the user's entry; absent: PINs stay at the service. */
  pin: attributeName.optional(),
});

const LDAP_URL = /^(ldaps?):\/\/(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?\/?$/;

const ldapSourceSchema = z
  .strictObject({
    /** ldaps://HOST[:PORT] (636), or ldap://HOST[:PORT] (389) with startTls. */
    url: z.string().regex(LDAP_URL, 'must be ldaps://HOST[:PORT] or ldap://HOST[:PORT]'),
    startTls: z.boolean().default(false),
    /** The CA that signed the server's certificate: only a certificate it signed is taken (pinned). */
    caFile: z.string().min(1).optional(),
    /** The name the server's certificate must carry, when not the URL's host. */
    serverName: z.string().min(1).max(253).optional(),
    /** Absent with bindPasswordFile absent: an anonymous bind. */
    bindDn: dn.optional(),
    bindPasswordFile: z.string().min(1).optional(),
    preset: z.enum(['openldap', 'active-directory']).default('openldap'),
    users: z.strictObject({ baseDn: dn, filter: ldapFilter.optional() }),
    /** Absent: no groups are synced. */
    groups: z.strictObject({ baseDn: dn, filter: ldapFilter.optional() }).optional(),
    attributes: ldapAttributes.prefault({}),
    intervalMinutes: wholeNumber().min(1).max(1440).default(15),
    /** A user whose entry is gone: suspended (kept, as HR's leaver), or removed as DELETE /user does. */
    onMissing: z.enum(['suspend', 'remove']).default('suspend'),
    /** A sync that would suspend or remove more than this share of LDAP's users is held until an operator confirms. */
    maxSuspendShare: z.number().min(0).max(1).default(0.05),
    /** Connect, bind and each search page. */
    timeoutSeconds: wholeNumber().min(1).max(600).default(30),
    pageSize: wholeNumber().min(10).max(5000).default(500),
  })
  .superRefine((ldap, ctx) => {
    const [, scheme, host] = LDAP_URL.exec(ldap.url) ?? [];
    if (scheme === 'ldap' && !ldap.startTls && !isLoopbackHost(host ?? '')) {
      ctx.addIssue({
        code: 'custom',
        path: ['url'],
        message: 'ldap:// sends the bind password and every person in clear text: use ldaps://, or startTls: true (ldap:// alone only to a loopback address)',
      });
    }
    if (scheme === 'ldaps' && ldap.startTls) {
      ctx.addIssue({ code: 'custom', path: ['startTls'], message: 'ldaps:// is TLS already: startTls goes with ldap://' });
    }
    if ((ldap.bindDn === undefined) !== (ldap.bindPasswordFile === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [ldap.bindDn === undefined ? 'bindDn' : 'bindPasswordFile'],
        message: 'bindDn and bindPasswordFile go together (neither: an anonymous bind)',
      });
    }
  });

const scimSourceSchema = z.strictObject({
  enabled: z.boolean().default(true),
  /** A SCIM attribute holding the person's card number (its full path); absent: cards stay at the service. */
  cardAttribute: z
    .string()
    .regex(
      /^(urn:[A-Za-z0-9:._-]+:)?[A-Za-z][A-Za-z0-9$_-]*(\.[A-Za-z][A-Za-z0-9$_-]*)?$/,
      'a SCIM attribute path: employeeNumber, or urn:...:User:employeeNumber',
    )
    .optional(),
});

export const identityServerSchema = z.strictObject({
  /** SCIM 2.0 under /scim/v2 (docs/identity-sources.md, "SCIM 2.0"); off without it. */
  scim: scimSourceSchema.optional(),
  /** An LDAP server or Active Directory, synced on a schedule (docs/identity-sources.md, "LDAP"); off without it. */
  ldap: ldapSourceSchema.optional(),
});
