import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { NO_RESTRICTIONS, type RestrictionSummary } from '../../src/store/restrictiveMerge.js';
import type { NewEvent } from '../../src/store/eventLog.js';
import { MassRemovalError } from '../../src/store/snapshotMerge.js';
import { RefusalRecorder } from '../../src/sync/refusalRecorder.js';

// Issue 51 item 9: a refused answer is audited once per run of refusals, again when it applied something.
const none = NO_RESTRICTIONS;
const some: RestrictionSummary = Object.assign({}, none, { suspended: 1, credentialsRemoved: 2, total: 3 });
const history = { from: 'a'.repeat(32), to: 'b'.repeat(32) };

describe('RefusalRecorder', () => {
  it('records each refusal that applied restrictions, a bare repeat of the last once, and again after a success', () => {
    const events: NewEvent[] = [];
    const recorder = new RefusalRecorder({ append: (e) => void events.push(e), wallNow: () => 1_000, logger: pino({ level: 'silent' }) });
    recorder.refused(new MassRemovalError(7, 11, 0.5, history, some));
    recorder.refused(new MassRemovalError(7, 11, 0.5, history, none)); // every later sync: refused again, nothing new
    recorder.refused(new MassRemovalError(7, 11, 0.5, history, none));
    recorder.refused(new MassRemovalError(7, 11, 0.5, history, Object.assign({}, none, { suspended: 1, total: 1 }))); // one more suspension
    recorder.refused(new MassRemovalError(8, 12, 0.5, undefined, none)); // another refusal
    recorder.synced();
    recorder.refused(new MassRemovalError(8, 12, 0.5, undefined, none));
    expect(events.map((e) => [e.type, e.door, e.data?.reason, e.data?.restrictions])).toEqual([
      ['sync_refused', null, 'history_changed', 3],
      ['sync_refused', null, 'history_changed', 1],
      ['sync_refused', null, 'mass_removal', 0],
      ['sync_refused', null, 'mass_removal', 0],
    ]);
    expect(events[0]!.data).toEqual({
      reason: 'history_changed',
      removed: 7,
      of: 11,
      restrictions: 3,
      suspended: 1,
      narrowed: 0,
      credentials_removed: 2,
      credentials_shortened: 0,
      levels_narrowed: 0,
      removals_waiting: 0,
    });
  });
});
