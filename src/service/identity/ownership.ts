import type { IdentitySource } from '../../api/identity.js';
import { BadRequest } from '../badRequest.js';
import type { IdentityOptions } from '../options.js';

/**
 * Which fields a source owns (docs/identity-sources.md, "Which source owns a user"): the one rule every route that
 * changes a user or a group asks, so a field owned by SCIM or LDAP is never changed elsewhere by mistake.
 */

/** What a route would change of a source-owned user or group. */
export type OwnedChange = 'suspension' | 'removal' | 'cards' | 'members' | 'fields';

const WHERE: Record<OwnedChange, string> = {
  suspension: 'suspend or enable the account there',
  fields: "change the person's name, e-mail or username there",
  removal: 'disable or delete the account there',
  cards: "change the card in the person's entry there (the attribute the site maps)",
  members: "change the group's members there",
};

/** The source in words, with the LDAP server's URL when there is one (never a credential: the URL holds none). */
export function sourceLabel(source: Exclude<IdentitySource, 'local'>, identity?: IdentityOptions): string {
  if (source === 'ldap') return identity?.ldap ? `LDAP (${identity.ldap.url})` : 'LDAP';
  return 'the identity provider (SCIM)';
}

/**
 * The refusal of a change to a user or group owned by a source: 409, naming the source and where to make the change.
 * `subject` is the user's e-mail or `group NAME`.
 */
export function ownedElsewhere(subject: string, source: Exclude<IdentitySource, 'local'>, change: OwnedChange, identity?: IdentityOptions): BadRequest {
  const after = source === 'ldap' ? 'the next sync brings it here' : 'the provider sends it here';
  return new BadRequest(`${subject} is managed by ${sourceLabel(source, identity)}: ${WHERE[change]}; ${after}`, 409);
}

/**
 * An operator of the service (rank ADMIN or SUPER): never taken over by a source, their e-mail never changed by one
 * (the console mails an operator's sign-in links to it; docs/identity-sources.md, "Which source owns a user").
 */
export const isOperatorRank = (rank: string): boolean => rank === 'ADMIN' || rank === 'SUPER';

/** Whether a user of `source` has their cards and PINs from that source (an attribute the site mapped), not the service. */
export function cardsOwnedBySource(source: IdentitySource, identity?: IdentityOptions): boolean {
  if (source === 'ldap') return identity?.ldap?.attributes.card !== undefined || identity?.ldap?.attributes.pin !== undefined;
  if (source === 'scim') return identity?.scim?.cardAttribute !== undefined;
  return false;
}

/** Refuses `change` to a user or group that a source owns; nothing for a local one. */
export function refuseIfOwned(subject: string, source: IdentitySource, change: OwnedChange, identity?: IdentityOptions): void {
  if (source === 'local') return;
  if (change === 'cards' && !cardsOwnedBySource(source, identity)) return;
  throw ownedElsewhere(subject, source, change, identity);
}
