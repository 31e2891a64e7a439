import type { SyncPlan } from './syncPlan.js';

/**
 * The guard (docs/identity-sources.md, "The guard"): a sync that would suspend or remove more than maxSuspendShare
 * of the users LDAP owns, or empty more than that share of its groups, applies nothing until an operator confirms
 * the number. A wrong base DN, a filter that matches nothing or a renamed OU reads as "everyone left": the guard
 * keeps the building open meanwhile.
 */

/** How many e-mail addresses a held sync names. */
const SAMPLE_SIZE = 10;

export interface GuardVerdict {
  /** Active users it would suspend or remove, plus the LDAP groups it would empty: what a confirmation must cover. */
  wouldSuspend: number;
  /** The active users LDAP owned before the sync. */
  of: number;
  /** How many it may suspend without a confirmation: max(1, floor(maxSuspendShare x of)). */
  allowed: number;
  held: boolean;
  /** held: what it would do and how to apply it; null otherwise. */
  reason: string | null;
  /** The first addresses it would suspend or remove. */
  sample: string[];
}

/** 0.05 -> "5 %". */
function percent(share: number): string {
  return `${Number((share * 100).toFixed(2))} %`;
}

/**
 * Whether `plan` may be applied. At least one suspension (and one group emptied) is always allowed, so that one
 * leaver among a handful of LDAP users (where 5 % rounds down to none) is not held. A group search that finds nothing
 * empties every LDAP group (their members lose those groups' doors): counted as suspensions are.
 * `confirmSuspensions`: the operator allows that many, users and groups together.
 */
export function judgePlan(plan: SyncPlan, maxSuspendShare: number, confirmSuspensions?: number): GuardVerdict {
  const lockedOut = plan.users.filter((u) => u.locksOut);
  const users = lockedOut.length;
  const groups = plan.gone.filter((g) => g.mark).length;
  const wouldSuspend = users + groups;
  const of = plan.ldapActive;
  const allowed = Math.max(1, Math.floor(maxSuspendShare * of));
  const allowedGroups = Math.max(1, Math.floor(maxSuspendShare * plan.ldapGroups));
  const sample = lockedOut.slice(0, SAMPLE_SIZE).map((u) => u.email);
  const confirmed = confirmSuspensions !== undefined && confirmSuspensions >= wouldSuspend;
  if ((users <= allowed && groups <= allowedGroups) || confirmed) return { wouldSuspend, of, allowed, held: false, reason: null, sample };
  const verb = lockedOut.some((u) => u.remove || u.replaces !== undefined) ? 'suspend or remove' : 'suspend';
  const withGroups = groups > 0 || plan.ldapGroups > 0;
  const what = withGroups ? `${users} of ${of} users and empty ${groups} of ${plan.ldapGroups} groups` : `${users} of ${of} users`;
  const check = withGroups ? 'users.baseDn, users.filter, groups.baseDn and groups.filter' : 'users.baseDn and users.filter';
  const short = confirmSuspensions !== undefined ? ` (confirm_suspensions=${confirmSuspensions} is fewer)` : '';
  return {
    wouldSuspend,
    of,
    allowed,
    held: true,
    reason: `would ${verb} ${what} from LDAP (over maxSuspendShare ${percent(maxSuspendShare)})${short}: check ${check}, then apply with confirm_suspensions=${wouldSuspend}`,
    sample,
  };
}
