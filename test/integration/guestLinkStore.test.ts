import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { guestLinkSchema, type GuestLink } from '../../src/api/shapes.js';
import { pinLabelSet } from '../../src/core/credentials.js';
import { CredentialCache } from '../../src/store/credentialCache.js';
import { openDatabase, openStateDatabase, type Db } from '../../src/store/database.js';
import { GuestLinkStore } from '../../src/store/guestLinkStore.js';
import { ReplayCache } from '../../src/store/replayCache.js';
import { DOOR_UUID, SECOND_DOOR_UUID, tempDir } from '../support/cli.js';
import { installWriteCounter } from '../support/db.js';

const tmp = tempDir('door-agent-guestlinks-');
afterAll(tmp.cleanup);

const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

let n = 0;
const freshFile = () => join(tmp.path, `cache-${n++}.db`);

/** This agent's doors have resource ids 12 and 13. */
const OURS = new Set([12, 13]);
const TOKEN = 'GuestToken-0123456789abcdef';
const PIN_LABELS = pinLabelSet(['PIN']);

function open(file = freshFile(), maxLinks?: number) {
  const db = openDatabase(file);
  opened.push(db);
  return { file, db, store: new GuestLinkStore(db, OURS, maxLinks), cache: new CredentialCache(db) };
}

/** A guest link as POST /magiclinkadmin creates it, validated as the MQTT guest links handler validates it. */
function link(overrides: Record<string, unknown> = {}): GuestLink {
  return guestLinkSchema.parse({
    magic_link_id: 'ml-1',
    magic_token: TOKEN,
    name: 'Plumber',
    email_list: ['boss@example.com'],
    resource_id_list: [12],
    start_time: '2026-12-01 08:00:00',
    end_time: '2026-12-05 18:00:00',
    time_mapping: [[], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 12]], []],
    smartcards: [{ number: '0012345', label: 'Guest card' }],
    config_id: 7,
    email_ids: { 'boss@example.com': 3 },
    ...overrides,
  });
}

const linkHolder = (id = 'ml-1', resourceIds = [12]) => ({
  kind: 'link',
  magicLinkId: id,
  resourceIds,
  startAt: Date.UTC(2026, 11, 1, 8),
  endAt: Date.UTC(2026, 11, 5, 18),
  timeMapping: [[], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 12]], []],
});

describe('GuestLinkStore on a SQLite file', () => {
  it('keeps at most maxLinks links from MQTT: a new one past the budget is refused, a known one still updates', () => {
    const { store, cache } = open(freshFile(), 2);
    expect(store.store(link({ magic_link_id: 'a', smartcards: [{ number: '1001' }] }))).toBe('stored');
    expect(store.store(link({ magic_link_id: 'b', smartcards: [{ number: '1002' }] }))).toBe('stored');
    expect(store.store(link({ magic_link_id: 'c', smartcards: [{ number: '1003' }] }))).toBe('over_budget');
    expect(cache.holdersOfNumber('1003', 'card', PIN_LABELS)).toEqual([]);
    expect(store.store(link({ magic_link_id: 'b', smartcards: [{ number: '2002' }] }))).toBe('stored');
    expect(cache.holdersOfNumber('2002', 'card', PIN_LABELS)).toHaveLength(1);
    expect(store.revoke('a')).toBe('revoked');
    expect(store.store(link({ magic_link_id: 'c', smartcards: [{ number: '1003' }] }))).toBe('stored');
  });

  it('with issued_at (signed messages), an older message replayed after a revocation cannot bring the link back', () => {
    const { store, cache } = open();
    expect(store.store(link(), 1000)).toBe('stored');
    expect(store.revoke('ml-1', 2000)).toBe('revoked');
    expect(store.store(link(), 1000)).toBe('stale');
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toEqual([]);
    expect(store.store(link(), 3000)).toBe('stored');
    expect(store.revoke('ml-1', 2500)).toBe('stale');
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toHaveLength(1);
  });

  it("stores a link for one of this agent's doors: its card and token then find the link", () => {
    const { store, cache } = open();
    expect(store.store(link())).toBe('stored');
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toEqual([linkHolder()]);
    expect(cache.holdersOfToken(TOKEN)).toEqual([linkHolder()]);
    expect(cache.holdersOfToken('GuestToken-0123456789abcdeX')).toEqual([]);
    expect(cache.holdersOfNumber('54321', 'card', PIN_LABELS)).toEqual([]);
    expect(cache.counts()).toEqual({ users: 0, credentials: 1, guestLinks: 1 });
  });

  it('keeps only a digest of the magic token in the cache', () => {
    const { file, store, db } = open();
    store.store(link());
    db.pragma('wal_checkpoint(TRUNCATE)');
    expect(JSON.stringify(db.prepare('SELECT * FROM guest_links').all())).not.toContain(TOKEN);
    const bytes = readFileSync(file);
    expect(bytes.includes(Buffer.from('Plumber'))).toBe(true); // the row did reach the file
    expect(bytes.includes(Buffer.from(TOKEN))).toBe(false);
  });

  it('stores a link with several doors when one of them is ours', () => {
    const { store, cache } = open();
    expect(store.store(link({ resource_id_list: [99, 13] }))).toBe('stored');
    expect(cache.holdersOfToken(TOKEN)).toEqual([linkHolder('ml-1', [99, 13])]);
  });

  it('stores a link without schedule fields as valid all week, without bounds', () => {
    const { store, cache } = open();
    const bare = link({ start_time: undefined, end_time: undefined, time_mapping: undefined });
    expect(store.store(bare)).toBe('stored');
    const [holder] = cache.holdersOfNumber('12345', 'card', PIN_LABELS);
    expect(holder).toMatchObject({ kind: 'link', startAt: null, endAt: null });
    expect(holder?.kind === 'link' ? holder.timeMapping : null).toEqual(Array.from({ length: 7 }, () => [[0, 24]]));
  });

  it('returns unchanged and writes no rows when the same link arrives again', () => {
    const { file, store, cache } = open();
    store.store(link({ smartcards: [{ number: '9' }, { number: '100', label: 'b' }, { number: '10' }, { number: '0011', label: 'a' }] }));
    const writes = installWriteCounter(file);
    expect(writes()).toBe(0);
    // Same link, fields in another order (as a retained message re-delivered on every reconnect).
    const again = link({ smartcards: [{ number: '0011', label: 'a' }, { number: '10' }, { number: '9' }, { number: '100', label: 'b' }] });
    expect(store.store(again)).toBe('unchanged');
    expect(store.store(again)).toBe('unchanged');
    expect(writes()).toBe(0);
    for (const number of ['9', '10', '11', '100']) expect(cache.holdersOfNumber(number, 'card', PIN_LABELS)).toHaveLength(1);
    // The counter does see writes: a real change is counted.
    expect(store.store(link({ name: 'Electrician' }))).toBe('stored');
    expect(writes()).toBeGreaterThan(0);
  });

  it('replaces the card of a changed link: the old card stops working, the new one works', () => {
    const { store, cache } = open();
    store.store(link());
    expect(store.store(link({ smartcards: [{ number: '777', label: 'New card' }] }))).toBe('stored');
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toEqual([]);
    expect(cache.holdersOfNumber('777', 'card', PIN_LABELS)).toEqual([linkHolder()]);
    expect(cache.counts()).toEqual({ users: 0, credentials: 1, guestLinks: 1 });
  });

  it('applies a changed end_time and token to the link and its cards', () => {
    const { store, cache } = open();
    store.store(link());
    const newToken = 'AnotherToken-0123456789abcdef';
    expect(store.store(link({ end_time: '2026-12-02 12:00:00', magic_token: newToken }))).toBe('stored');
    const endAt = Date.UTC(2026, 11, 2, 12);
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toEqual([{ ...linkHolder(), endAt }]);
    expect(cache.holdersOfToken(newToken)).toEqual([{ ...linkHolder(), endAt }]);
    expect(cache.holdersOfToken(TOKEN)).toEqual([]);
  });

  it('returns not_here for a link naming only other doors, and stores nothing', () => {
    const { file, store, cache } = open();
    const writes = installWriteCounter(file);
    expect(store.store(link({ resource_id_list: [99] }))).toBe('not_here');
    expect(store.store(link({ resource_id_list: [] }))).toBe('not_here');
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toEqual([]);
    expect(cache.holdersOfToken(TOKEN)).toEqual([]);
    expect(writes()).toBe(0);
  });

  it('revokes an earlier version that named our door when the link moves to another door', () => {
    const { store, cache } = open();
    store.store(link());
    expect(store.store(link({ resource_id_list: [99] }))).toBe('revoked');
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toEqual([]);
    expect(cache.holdersOfToken(TOKEN)).toEqual([]);
    expect(cache.counts()).toEqual({ users: 0, credentials: 0, guestLinks: 0 });
    expect(store.store(link({ resource_id_list: [99] }))).toBe('not_here');
  });

  it('revoke() removes the link and its cards; revoking again changes nothing', () => {
    const { store, cache } = open();
    store.store(link({ smartcards: [{ number: '1' }, { number: '2' }] }));
    expect(store.revoke('ml-1')).toBe('revoked');
    expect(cache.holdersOfNumber('1', 'card', PIN_LABELS)).toEqual([]);
    expect(cache.holdersOfNumber('2', 'card', PIN_LABELS)).toEqual([]);
    expect(cache.holdersOfToken(TOKEN)).toEqual([]);
    expect(store.revoke('ml-1')).toBe('unchanged');
    expect(store.revoke('never-existed')).toBe('unchanged');
  });

  it('keeps links apart: revoking one leaves another holding the same card', () => {
    const { store, cache } = open();
    store.store(link());
    store.store(link({ magic_link_id: 'ml-2', magic_token: 'SecondToken-0123456789abcdef', resource_id_list: [13] }));
    expect(
      cache
        .holdersOfNumber('12345', 'card', PIN_LABELS)
        .map((h) => (h.kind === 'link' ? h.magicLinkId : null))
        .sort(),
    ).toEqual(['ml-1', 'ml-2']);
    store.revoke('ml-1');
    expect(cache.holdersOfNumber('12345', 'card', PIN_LABELS)).toEqual([linkHolder('ml-2', [13])]);
    expect(cache.holdersOfToken('SecondToken-0123456789abcdef')).toHaveLength(1);
  });

  it('a numeric magic_link_id is the same link as its string form', () => {
    const { store, cache } = open();
    store.store(link({ magic_link_id: 42 }));
    expect(store.store(link({ magic_link_id: '42' }))).toBe('unchanged');
    expect(store.revoke('42')).toBe('revoked');
    expect(cache.holdersOfToken(TOKEN)).toEqual([]);
  });

  it('survives closing and reopening the cache', () => {
    const first = open();
    first.store.store(link());
    first.db.close();
    const second = open(first.file);
    expect(second.cache.holdersOfToken(TOKEN)).toEqual([linkHolder()]);
    expect(second.store.store(link())).toBe('unchanged');
  });
});

describe('ReplayCache on a SQLite file', () => {
  const openState = (file = freshFile()) => {
    const db = openStateDatabase(file);
    opened.push(db);
    return { file, db };
  };
  const T0 = Date.parse('2026-11-24T09:00:00.000Z');

  it('remembers executed request_ids', () => {
    const { db } = openState();
    const replay = new ReplayCache(db);
    expect(replay.seen('req-1')).toBe(false);
    replay.remember('req-1', DOOR_UUID, T0, 60_000);
    expect(replay.seen('req-1')).toBe(true);
    expect(replay.seen('req-2')).toBe(false);
    expect(replay.seen('REQ-1')).toBe(false);
  });

  it('a request_id used at one door is seen at every door', () => {
    const { db } = openState();
    const replay = new ReplayCache(db);
    replay.remember('shared', DOOR_UUID, T0, 60_000);
    expect(() => replay.remember('shared', SECOND_DOOR_UUID, T0 + 1, 60_000)).not.toThrow();
    expect(replay.seen('shared')).toBe(true);
  });

  it('keeps request_ids across a restart', () => {
    const first = openState();
    new ReplayCache(first.db).remember('req-persist', DOOR_UUID, T0, 60_000);
    first.db.close();
    expect(new ReplayCache(openState(first.file).db).seen('req-persist')).toBe(true);
  });

  it('prune forgets rows dated before the cutoff, and ids in memory once their span ran out on the monotonic clock', () => {
    const { db } = openState();
    let mono = 1_000;
    const replay = new ReplayCache(db, undefined, () => mono);
    replay.remember('old-1', DOOR_UUID, T0 - 120_000, 0);
    replay.remember('old-2', SECOND_DOOR_UUID, T0 - 60_001, 0);
    replay.remember('edge', DOOR_UUID, T0 - 60_000, 0);
    replay.remember('new', DOOR_UUID, T0, 60_000);
    mono += 1;
    replay.prune(T0 - 60_000);
    expect(replay.seen('old-1')).toBe(false);
    expect(replay.seen('old-2')).toBe(false);
    expect(replay.seen('edge')).toBe(true);
    expect(replay.seen('new')).toBe(true);
    expect(db.prepare('SELECT request_id FROM command_requests ORDER BY request_id').pluck().all()).toEqual(['edge', 'new']);
  });

  it('an id stays in memory for its span whatever the wall time given to prune (a wall clock may step)', () => {
    const { db } = openState();
    let mono = 1_000;
    const replay = new ReplayCache(db, undefined, () => mono);
    replay.remember('req', DOOR_UUID, T0, 60_000);
    replay.prune(T0 + 3_600_000); // the rows on disk go: dated before the cutoff
    expect(db.prepare('SELECT count(*) FROM command_requests').pluck().get()).toBe(0);
    expect(replay.seen('req')).toBe(true);
    mono += 60_001;
    replay.prune(T0 + 3_600_000);
    expect(replay.seen('req')).toBe(false);
  });
});
