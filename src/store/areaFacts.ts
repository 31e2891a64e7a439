import type { AreaFact, Direction, PresenceEntry } from '../core/areas.js';
import type { Db } from './database.js';
import { withProps } from '../core/objects.js';

/**
 * The facts an area's state is folded from (docs/areas.md, "State derived, not written"), as the audit log holds
 * them: no table of their own, no write per tap beyond the audit event.
 * - a passage: `passages: [{area, holder, direction}]` in the `access_granted` of a door without a contact (or open
 *   already) and in the `door_opened` after a grant; its time and door are the event's;
 * - a reset: an `area_reset` event, `{area}` (null: every area);
 * - a checkpoint: an `area_checkpoint` event, `{area, since, presence: [{holder, inside, at, door}]}` (times ISO).
 */

/** One passage in an event's `passages` (the holder as its key, `user:<email_id>` or `link:<magic_link_id>`). */
export interface PassageRecord {
  area: string;
  holder: string;
  direction: Direction;
  /** When the person passed (ISO): the time the live state holds, so the state rebuilt at start is the same to the ms. */
  at: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A passage's own time; an event written before passages carried one (or a bad one): the event's. */
function passageTime(at: unknown, eventAt: number): number {
  const ms = typeof at === 'string' ? Date.parse(at) : Number.NaN;
  return Number.isFinite(ms) ? ms : eventAt;
}

/** The payload of an area_reset event of this fact (besides who asked for it). */
export function resetData(area: string | null): Record<string, unknown> {
  return { area };
}

/** The payload of an area_checkpoint event. */
export function checkpointData(fact: Extract<AreaFact, { kind: 'checkpoint' }>): Record<string, unknown> {
  return { area: fact.area, since: iso(fact.since), presence: fact.presence.map((p) => withProps(p, { at: iso(p.at) })) };
}

interface Row {
  seq: number;
  at: number;
  door_uuid: string | null;
  type: string;
  payload: string;
}

const isDirection = (d: unknown): d is Direction => d === 'entry' || d === 'exit';

/** The facts of one event row; a row that says nothing about these areas gives none. */
function factsOf(row: Row, areas: ReadonlySet<string>): AreaFact[] {
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(row.payload) as Record<string, unknown>;
  } catch {
    return [];
  }
  if (row.type === 'area_reset') {
    const area = data.area ?? null;
    return area === null || (typeof area === 'string' && areas.has(area)) ? [{ kind: 'reset', area: area as string | null, at: row.at }] : [];
  }
  if (row.type === 'area_checkpoint') {
    if (typeof data.area !== 'string' || !areas.has(data.area) || !Array.isArray(data.presence)) return [];
    const presence: PresenceEntry[] = (data.presence as Array<Record<string, unknown>>).flatMap((p) =>
      typeof p.holder === 'string' && typeof p.door === 'string' && typeof p.at === 'string'
        ? [{ holder: p.holder, inside: p.inside === true, at: Date.parse(p.at), door: p.door }]
        : [],
    );
    return [{ kind: 'checkpoint', area: data.area, at: row.at, since: Date.parse(String(data.since)), presence }];
  }
  if (!Array.isArray(data.passages) || row.door_uuid === null) return [];
  const door = row.door_uuid;
  return (data.passages as Array<Record<string, unknown>>).flatMap((p) =>
    typeof p.area === 'string' && areas.has(p.area) && typeof p.holder === 'string' && isDirection(p.direction)
      ? [{ kind: 'passage' as const, area: p.area, holder: p.holder, direction: p.direction, door, at: passageTime(p.at, row.at) }]
      : [],
  );
}

/**
 * The facts the areas' state is rebuilt from at start, in the log's order: every fact since the oldest of the
 * areas' last reset or checkpoint (each area's own base replaces what came before it for that area), and for each
 * area the seq of that base (0: none in the log). Reads the log's few resets and checkpoints first, then only the
 * events after the oldest base whose payload names passages.
 */
export function readAreaFacts(db: Db, areaIds: readonly string[]): { facts: AreaFact[]; bases: Map<string, number> } {
  const areas = new Set(areaIds);
  const bases = new Map<string, number>(areaIds.map((a) => [a, 0]));
  if (areas.size === 0) return { facts: [], bases };
  const baseRows = db
    .prepare("SELECT seq, at, door_uuid, type, payload FROM events WHERE type IN ('area_reset', 'area_checkpoint') ORDER BY seq")
    .all() as Row[];
  for (const row of baseRows) {
    for (const fact of factsOf(row, areas)) {
      if (fact.kind === 'passage') continue;
      if (fact.area === null) for (const a of areas) bases.set(a, row.seq);
      else bases.set(fact.area, row.seq);
    }
  }
  const from = Math.min(...bases.values());
  const rows = db
    .prepare(
      `SELECT seq, at, door_uuid, type, payload FROM events WHERE seq >= ? AND (type IN ('area_reset', 'area_checkpoint')
         OR (type IN ('access_granted', 'door_opened') AND payload LIKE '%"passages":%')) ORDER BY seq`,
    )
    .all(from) as Row[];
  return { facts: rows.flatMap((row) => factsOf(row, areas)), bases };
}
