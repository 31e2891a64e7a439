import type { Db } from '../store/database.js';
import { applyRestrictions } from '../store/restrictiveMerge.js';
import type { ServiceLevels } from '../store/serviceLevels.js';
import { MassRemovalError, type HistoryChange } from '../store/snapshotMerge.js';

/**
 * An answer the mass-removal guard refused (docs/sync.md, "Mass-removal guard"): its restrictive part (suspensions,
 * fewer groups, cards and PINs taken away, shorter validity, narrower service levels) applies now, in the caller's
 * transaction, against the cache as it is; the users it no longer lists and whatever grants wait for the operator.
 * Returns the refusal to throw once that transaction has committed, saying what was applied. `levels`: the
 * answer's service levels (GET /directory); undefined for an answer that carries none (the seed's calls).
 */
export function restrictRefused(
  db: Db,
  refusal: MassRemovalError,
  options: { maxRemovalRatio: number | null; levels?: ServiceLevels | null; history?: HistoryChange },
): MassRemovalError {
  const restricted = applyRestrictions(db, { maxRemovalRatio: options.maxRemovalRatio, levels: options.levels });
  return new MassRemovalError(refusal.removed, refusal.current, refusal.maxRatio, options.history ?? refusal.history, restricted);
}
