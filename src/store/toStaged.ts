import type { GuestLink, UserDetail, UserListItem } from '../api/shapes.js';
import { normalizeStoredNumber } from '../core/credentials.js';
import { ALL_WEEK, parseServiceTime } from '../core/schedule.js';
import type { StagedDetail, StagedLink, StagedUser } from './snapshotStage.js';
import { tokenDigest } from './tokens.js';

/** Flattens the service's array-of-arrays name lists, without duplicates, in first-seen order. */
function flattenNames(matrix: ReadonlyArray<ReadonlyArray<string>>): string[] {
  return [...new Set(matrix.flat())];
}

type Card = { number: string; label?: string | null | undefined; valid_from?: string | null | undefined; valid_until?: string | null | undefined };

function cards(list: ReadonlyArray<Card> | null | undefined) {
  // The schemas already checked each number is an integer string and each date a service time, so neither
  // normalization nor parsing can fail here. The digits as given are kept: a PIN's leading zeros count.
  return (list ?? []).map((c) => ({
    // A malformed facility:card is kept as given: it matches no read, and the directory scan reports it.
    number: normalizeStoredNumber(c.number) ?? c.number,
    label: c.label ?? null,
    digits: c.number,
    validFrom: c.valid_from ? parseServiceTime(c.valid_from) : null,
    validUntil: c.valid_until ? parseServiceTime(c.valid_until) : null,
  }));
}

export function toStagedUser(item: UserListItem, tagOverride?: 'USER' | 'GUEST'): StagedUser {
  const name = item.name ?? [item.first_name, item.last_name].filter(Boolean).join(' ');
  return {
    emailId: item.email_id,
    userId: item.user_id ?? null,
    name,
    email: item.email ?? null,
    tag: tagOverride ?? item.user_tag ?? 'USER',
    adStatus: item.ad_status,
    groups: flattenNames(item.groups),
  };
}

export function toStagedDetail(emailId: number, detail: UserDetail): StagedDetail {
  return { emailId, policies: flattenNames(detail.policies), smartcards: cards(detail.smartcards) };
}

export function toStagedLink(link: GuestLink): StagedLink {
  return {
    magicLinkId: link.magic_link_id,
    name: link.name,
    tokenDigest: tokenDigest(link.magic_token),
    resourceIds: link.resource_id_list,
    startAt: link.start_time ? parseServiceTime(link.start_time) : null,
    endAt: link.end_time ? parseServiceTime(link.end_time) : null,
    timeMapping: link.time_mapping ?? ALL_WEEK,
    emailList: link.email_list,
    smartcards: cards(link.smartcards),
  };
}
