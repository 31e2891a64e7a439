import type { Logger } from 'pino';
import type { NewEvent } from '../store/eventLog.js';
import type { MassRemovalError } from '../store/snapshotMerge.js';

/**
 * The daemon's audit of answers the mass-removal guard refused (docs/sync.md, "Mass-removal guard"): one
 * `sync_refused` event (no door) saying why, how much the answer would remove and which restrictions of it were
 * applied at once; counts only, never a number. Every sync is refused again until the operator acts: a refusal
 * that applied nothing new and is the one recorded last is not recorded again (the log has it); a successful sync
 * ends the run.
 */
export class RefusalRecorder {
  private last: string | null = null;

  constructor(private readonly deps: { append: (event: NewEvent) => void; wallNow: () => number; logger: Logger }) {}

  refused(err: MassRemovalError): void {
    const r = err.restricted;
    const reason = err.history ? 'history_changed' : 'mass_removal';
    const key = `${reason}/${err.removed}/${err.current}/${r?.removalsWaiting ?? 0}`;
    if ((r?.total ?? 0) === 0 && key === this.last) return;
    this.last = key;
    try {
      this.deps.append({
        type: 'sync_refused',
        door: null,
        at: this.deps.wallNow(),
        data: {
          reason,
          removed: err.removed,
          of: err.current,
          restrictions: r?.total ?? 0,
          suspended: r?.suspended ?? 0,
          narrowed: r?.narrowed ?? 0,
          credentials_removed: r?.credentialsRemoved ?? 0,
          credentials_shortened: r?.credentialsShortened ?? 0,
          levels_narrowed: r?.levelsNarrowed ?? 0,
          removals_waiting: r?.removalsWaiting ?? 0,
        },
      });
    } catch (e) {
      this.deps.logger.error({ err: e }, 'cannot record the refused sync');
    }
  }

  /** A sync succeeded: the next refusal is recorded whatever it applies. */
  synced(): void {
    this.last = null;
  }
}
