import { describe, expect, it } from 'vitest';
import { lastSyncLines, lastSyncView } from '../../src/commands/syncStatus.js';
import type { SyncStatus } from '../../src/sync/sync.js';

const ZERO = { added: 0, changed: 0, removed: 0, unchanged: 0 };
const status = (summary: Partial<NonNullable<SyncStatus['lastSummary']>>): SyncStatus => ({
  lastSuccessAt: '2026-07-01T12:00:00.000Z',
  lastAttemptAt: '2026-07-01T12:00:00.000Z',
  lastError: null,
  lastSummary: { users: ZERO, credentials: ZERO, guestLinks: ZERO, rowsWritten: 0, revision: 8, mode: 'directory_delta', ...summary },
});

describe("status: the last sync's line", () => {
  it('full or delta, the duration, the bytes on the wire and decompressed', () => {
    const view = lastSyncView(status({ durationMs: 1234.4, wireBytes: 1260, bodyBytes: 5_939 }));
    expect(view).toEqual({ at: '2026-07-01T12:00:00.000Z', kind: 'delta', mode: 'directory_delta', durationMs: 1234, wireBytes: 1260, bodyBytes: 5939 });
    expect(lastSyncLines(view)).toEqual([
      'last sync: delta (GET /directory, the changes since the revision held), 1.2 s, 1.2 KiB on the wire (5.8 KiB decompressed)',
    ]);
    const big = lastSyncView(status({ mode: 'directory_full', durationMs: 4200, wireBytes: 6_400_000, bodyBytes: 61_100_000 }));
    expect(lastSyncLines(big)).toEqual(['last sync: full (GET /directory), 4.2 s, 6.1 MiB on the wire (58.3 MiB decompressed)']);
    expect(lastSyncView(status({ mode: 'lists', durationMs: 10, wireBytes: 900, bodyBytes: 900 }))?.kind).toBe('full');
    expect(lastSyncLines(lastSyncView(status({ mode: 'unchanged', durationMs: 40, wireBytes: 0, bodyBytes: 0 })))).toEqual([
      'last sync: unchanged (GET /directory: 304, nothing new), 0.0 s, 0 bytes on the wire (not compressed)',
    ]);
  });

  it('a status written before sizes were kept shows what it has; none before the first sync', () => {
    const old = lastSyncView(status({ mode: 'directory_full' }));
    expect(old).toMatchObject({ kind: 'full', durationMs: null, wireBytes: null, bodyBytes: null });
    expect(lastSyncLines(old)).toEqual(['last sync: full (GET /directory)']);
    expect(lastSyncView({ lastSuccessAt: null, lastAttemptAt: null, lastError: 'down', lastSummary: null })).toBe(null);
    expect(lastSyncLines(null)).toEqual([]);
  });
});
