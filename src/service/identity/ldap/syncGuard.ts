import type { SyncPlan } from './syncPlan.js';

/**
 * The guard (docs/identity-sources.md, "The guard"): a sync that would suspend or remove more than maxSuspendShare
 * of the users LDAP owns applies nothing until an operator confirms the number. A wrong base DN, a filter that
 * matches nothing or a renamed OU reads as "everyone left": the guard keeps the building open meanwhile.
 */

/** How many e-mail addresses a held sync names. */
const SAMPLE_SIZE = 10;

export interface GuardVerdict {
  /** Active users it would suspend or remove. */
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
 * Whether `plan` may be applied. At least one suspension is always allowed, so that one leaver among a handful of
 * LDAP users (where 5 % rounds down to none) is not held. `confirmSuspensions`: the operator allows that many.
 */
export function judgePlan(plan: SyncPlan, maxSuspendShare: number, confirmSuspensions?: number): GuardVerdict {
  const lockedOut = plan.users.filter((u) => u.locksOut);
  const wouldSuspend = lockedOut.length;
  const of = plan.ldapActive;
  const allowed = Math.max(1, Math.floor(maxSuspendShare * of));
  const sample = lockedOut.slice(0, SAMPLE_SIZE).map((u) => u.email);
  const confirmed = confirmSuspensions !== undefined && confirmSuspensions >= wouldSuspend;
  if (wouldSuspend <= allowed || confirmed) return { wouldSuspend, of, allowed, held: false, reason: null, sample };
  const verb = lockedOut.some((u) => u.remove) ? 'suspend or remove' : 'suspend';
  const short = confirmSuspensions !== undefined ? ` (confirm_suspensions=${confirmSuspensions} is fewer)` : '';
  return {
    wouldSuspend,
    of,
    allowed,
    held: true,
    reason:
      `would ${verb} ${wouldSuspend} of ${of} users from LDAP (over maxSuspendShare ${percent(maxSuspendShare)})${short}: ` +
      `check users.baseDn and users.filter, then apply with confirm_suspensions=${wouldSuspend}`,
    sample,
  };
}
