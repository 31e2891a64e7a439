import type { HeldBack, SyncStatus } from '../sync/sync.js';
import { describeRestrictions } from '../store/restrictiveMerge.js';
import { describeBeyondCache } from '../store/widening.js';

/** The last successful sync as `status` shows it: full or a delta, how long, how many bytes. */
export interface LastSyncView {
  at: string;
  /** full: the whole directory (GET /directory in full, or the seed's list calls); delta: the changes; unchanged: a 304. */
  kind: 'full' | 'delta' | 'unchanged';
  mode: 'directory_full' | 'directory_delta' | 'unchanged' | 'lists';
  /** null in a status written before they were kept (an upgraded agent, until its next sync). */
  durationMs: number | null;
  /** The answers' bodies as received (compressed or not). */
  wireBytes: number | null;
  /** The same decompressed. */
  bodyBytes: number | null;
}

const KIND = { directory_full: 'full', lists: 'full', directory_delta: 'delta', unchanged: 'unchanged' } as const;

const HOW = {
  directory_full: 'full (GET /directory)',
  lists: 'full (GET /multipleusers and GET /user)',
  directory_delta: 'delta (GET /directory, the changes since the revision held)',
  unchanged: 'unchanged (GET /directory: 304, nothing new)',
} as const;

export function lastSyncView(s: SyncStatus): LastSyncView | null {
  const summary = s.lastSummary;
  if (!summary || !s.lastSuccessAt) return null;
  return {
    at: s.lastSuccessAt,
    kind: KIND[summary.mode],
    mode: summary.mode,
    durationMs: summary.durationMs === undefined ? null : Math.round(summary.durationMs),
    wireBytes: summary.wireBytes ?? null,
    bodyBytes: summary.bodyBytes ?? null,
  };
}

/** 512 bytes, 3.4 KiB, 58.2 MiB, 1.1 GiB. */
function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** `last sync: delta (...), 0.2 s, 1.3 KiB on the wire (4.1 KiB decompressed)`; nothing before the first sync. */
export function lastSyncLines(last: LastSyncView | null): string[] {
  if (!last) return [];
  const parts: string[] = [HOW[last.mode]];
  if (last.durationMs !== null) parts.push(`${(last.durationMs / 1000).toFixed(1)} s`);
  if (last.wireBytes !== null && last.bodyBytes !== null) {
    parts.push(
      last.wireBytes === last.bodyBytes
        ? `${formatBytes(last.wireBytes)} on the wire (not compressed)`
        : `${formatBytes(last.wireBytes)} on the wire (${formatBytes(last.bodyBytes)} decompressed)`,
    );
  }
  return [`last sync: ${parts.join(', ')}`];
}

const REFUSED = {
  mass_removal: 'the mass-removal guard',
  history_changed: "the mass-removal guard, the service's directory history having changed (its database restored from a backup or replaced)",
} as const;

/**
 * An answer the mass-removal guard refused, or a restore awaiting acceptance at the service: what of it the door
 * applied at once (its restrictive part) and what waits for the operator; nothing when none is held back.
 */
export function heldBackLines(held: HeldBack | null | undefined): string[] {
  if (!held) return [];
  const applied =
    held.restricted.total > 0
      ? `its restrictive part applied at once (${describeRestrictions(held.restricted)})`
      : 'nothing in it restricts the users the door holds: the cache is unchanged';
  const alsoWaiting = held.restricted.removalsWaiting > 0 ? `, the ${held.restricted.removalsWaiting} credentials it takes from users it still lists` : '';
  if (held.restore) {
    const removal =
      held.waiting.credentialsRemoved > 0 ? `, the removal of ${held.waiting.credentialsRemoved} of ${held.waiting.credentialsBefore} credentials` : '';
    return [
      `held back: the service's database was restored from a backup (detected ${held.restore.detectedAt}) and the restore awaits acceptance at the service (last refused at ${held.at}); ${applied}`,
      `  waiting for the restore to be accepted at the service (POST /directory/restore/accept or the console), or door-agent sync --allow-mass-removal here: ` +
        `${describeBeyondCache(held.restore.beyondCache)} beyond the cache${removal}${alsoWaiting}, and the rest of the answer`,
    ];
  }
  return [
    `held back: the service's answer (last at ${held.at}) is refused by ${REFUSED[held.reason]}; ${applied}`,
    `  waiting for door-agent sync --allow-mass-removal: the removal of ${held.waiting.credentialsRemoved} of ${held.waiting.credentialsBefore} credentials${alsoWaiting} and the rest of the answer (additions, reinstatements, wider access)`,
  ];
}
