import type { HolderRef } from './decision.js';
import { nextReset } from './dailyReset.js';

/**
 * Areas (issue 26): the doors that lead into a space, with anti-passback and occupancy. Pure: the state is a fold
 * over audited facts (a passage, a reset, a checkpoint), so the daemon rebuilds it at start by replaying its event
 * log (`replay`), and a tap costs no write beyond its own audit event. See docs/areas.md.
 */

/** Which reader of the door the credential was presented at: into the area, or out of it. */
export type Direction = 'entry' | 'exit';
export type PassbackMode = 'off' | 'soft' | 'hard';
export type PassbackRule = 'timed' | 'inout';
export type AreaDenyReason = 'passback' | 'area_full';

/** What the decision needs of an area's configuration. */
export interface AreaPolicy {
  id: string;
  /** seconds: the window of the timed rule (unused by inout; the configuration check requires it with timed). */
  antiPassback: { mode: PassbackMode; rule: PassbackRule; seconds: number | null };
  /** null: no maximum. */
  maxOccupancy: number | null;
}

/** Where a holder was last seen at an area. */
export interface Presence {
  inside: boolean;
  /** The passage (wall ms). */
  at: number;
  /** The door passed. */
  door: string;
}

/** One area since its last reset. An area nobody has passed since (or ever) has no state: everyone is unknown there. */
export interface AreaState {
  /** By holder key (`holderKey`): the user or the guest link, never the card (a user with two cards is one person). */
  presence: ReadonlyMap<string, Presence>;
  /** How many presences are inside: the occupancy. */
  count: number;
  /** The first fact since the last reset (wall ms): a scheduled reset after it and before now is due. */
  since: number;
}

/** A grant at a door with a contact, not yet through it: it becomes a passage when the door opens. */
export interface PendingPassage {
  area: string;
  holder: string;
  direction: Direction;
  /** The grant (wall ms): the timed rule's window runs from it while the grant is pending. */
  at: number;
}

export interface AreasState {
  areas: ReadonlyMap<string, AreaState>;
  /**
   * Per door. Not derived from facts and not kept across a restart: the agent locks every door when it starts, so a
   * grant whose door had not opened yet is no passage (as when its unlock runs out).
   */
  pending: ReadonlyMap<string, readonly PendingPassage[]>;
}

export const NO_AREAS: AreasState = { areas: new Map(), pending: new Map() };

/** A checkpoint's presence, as a list (an audit event's payload is JSON). */
export interface PresenceEntry extends Presence {
  holder: string;
}

/**
 * What the state is folded from, each one an audit event: a holder passed a door of an area; an area (null: every
 * area) was reset; an area's whole state, written now and then so that replay need not reach back to the last reset
 * (the audit log is bounded).
 */
export type AreaFact =
  | { kind: 'passage'; area: string; holder: string; direction: Direction; door: string; at: number }
  | { kind: 'reset'; area: string | null; at: number }
  | { kind: 'checkpoint'; area: string; at: number; since: number; presence: readonly PresenceEntry[] };

/** The key of a holder in an area's state and its facts. */
export function holderKey(ref: HolderRef): string {
  return 'email_id' in ref ? `user:${ref.email_id}` : `link:${ref.magic_link_id}`;
}

/** The holder a key names (for the audit event and the muster list). */
export function holderRefOf(key: string): HolderRef {
  return key.startsWith('user:') ? { email_id: Number(key.slice(5)) } : { magic_link_id: key.slice(5) };
}

/** The facts applied in order. One code path for the live state and for replay, so the two cannot differ. @internal */
export function applyFacts(state: AreasState, facts: readonly AreaFact[]): AreasState {
  if (facts.length === 0) return state;
  const areas = new Map(state.areas);
  // Each area touched is copied once per call, then changed in place: replay of n facts is O(n).
  const drafts = new Map<string, { presence: Map<string, Presence>; count: number; since: number }>();
  const draft = (id: string, at: number) => {
    let d = drafts.get(id);
    if (d === undefined) {
      const current = areas.get(id);
      d = current ? { presence: new Map(current.presence), count: current.count, since: current.since } : { presence: new Map(), count: 0, since: at };
      drafts.set(id, d);
      areas.set(id, d);
    }
    return d;
  };
  for (const fact of facts) {
    if (fact.kind === 'reset') {
      if (fact.area === null) {
        areas.clear();
        drafts.clear();
      } else {
        areas.delete(fact.area);
        drafts.delete(fact.area);
      }
    } else if (fact.kind === 'checkpoint') {
      const presence = new Map(fact.presence.map(({ holder, inside, at, door }) => [holder, { inside, at, door }]));
      const d = { presence, count: fact.presence.filter((p) => p.inside).length, since: fact.since };
      drafts.set(fact.area, d);
      areas.set(fact.area, d);
    } else {
      const d = draft(fact.area, fact.at);
      const entry = fact.direction === 'entry';
      const wasInside = d.presence.get(fact.holder)?.inside === true;
      d.presence.set(fact.holder, { inside: entry, at: fact.at, door: fact.door });
      if (entry && !wasInside) d.count++;
      else if (!entry && wasInside) d.count--;
    }
  }
  return { areas, pending: state.pending };
}

/** The state after these facts, from nothing: what the daemon rebuilds at start from its audit log. */
export function replay(facts: readonly AreaFact[]): AreasState {
  return applyFacts(NO_AREAS, facts);
}

/** A holder at a door's reader: `exempt` for a responder or a duress grant (no anti-passback, no maximum). */
export interface PassageParty {
  holder: string;
  exempt: boolean;
}

export interface PassageRequest {
  /** The door of the tap: the holder's grant pending at this door and reader is this passage again, not another one. */
  door: string;
  direction: Direction;
  /** One holder, or both of a two-person door's. */
  holders: readonly PassageParty[];
  /** Wall ms. */
  now: number;
}

/** allowed: the passage may go ahead (`violations`: the holders soft anti-passback lets through, to be raised). */
export type AreaVerdict = { allowed: true; violations: readonly string[] } | { allowed: false; reason: AreaDenyReason; holders: readonly string[] };

/** Whether a passage in `direction` at `now` breaks the rule against an earlier one (`inside` after it, at `at`). */
function breaks(policy: AreaPolicy, earlier: { inside: boolean; at: number }, direction: Direction, now: number): boolean {
  if (policy.antiPassback.rule === 'timed') return now - earlier.at < (policy.antiPassback.seconds ?? 0) * 1000;
  return direction === 'entry' ? earlier.inside : !earlier.inside;
}

/**
 * Whether this passage breaks the area's anti-passback rule: against the holder's last passage (a holder not seen
 * since the reset is unknown: no), and against each of their grants still pending at another door or reader of the
 * area, as if it had passed already (it may pass at any moment: a badge handed back before the first door opens is
 * a second person on one holder's grants). Their grant pending at this door and reader is this passage again.
 */
function isPassbackViolation(state: AreasState, policy: AreaPolicy, holder: string, req: PassageRequest): boolean {
  if (policy.antiPassback.mode === 'off') return false;
  const seen = state.areas.get(policy.id)?.presence.get(holder);
  if (seen !== undefined && breaks(policy, seen, req.direction, req.now)) return true;
  if (state.pending.size === 0) return false;
  for (const [door, list] of state.pending) {
    for (const p of list) {
      if (p.area !== policy.id || p.holder !== holder || (door === req.door && p.direction === req.direction)) continue;
      if (breaks(policy, { inside: p.direction === 'entry', at: p.at }, req.direction, req.now)) return true;
    }
  }
  return false;
}

const NONE: ReadonlySet<string> = new Set();

function pendingEntries(state: AreasState, area: string): ReadonlySet<string> {
  if (state.pending.size === 0) return NONE;
  const holders = new Set<string>();
  for (const list of state.pending.values()) {
    for (const p of list) if (p.area === area && p.direction === 'entry') holders.add(p.holder);
  }
  return holders;
}

/**
 * The area's verdict on a passage the access decision granted; changes nothing. Anti-passback first, against the
 * holder's last passage and their grants pending at the area's other doors and readers (hard refuses with
 * `passback`, soft lets through and names the violations), then the maximum: an entry that would take the
 * occupancy past `maxOccupancy` is refused with `area_full`. A grant not yet through its door holds a place, so two
 * doors cannot admit one person too many between them. An exit is never refused for occupancy; an exempt holder
 * is never refused, and still counts once inside. O(1) in the occupancy (map lookups; the pending grants are
 * a handful at most).
 */
export function decidePassage(state: AreasState, policy: AreaPolicy, req: PassageRequest): AreaVerdict {
  const area = state.areas.get(policy.id);
  const violations: string[] = [];
  for (const party of req.holders) {
    if (!party.exempt && isPassbackViolation(state, policy, party.holder, req)) violations.push(party.holder);
  }
  if (violations.length > 0 && policy.antiPassback.mode === 'hard') return { allowed: false, reason: 'passback', holders: violations };
  if (req.direction === 'entry' && policy.maxOccupancy !== null) {
    const pending = pendingEntries(state, policy.id);
    const inside = (holder: string) => area?.presence.get(holder)?.inside === true;
    const newcomers = req.holders.filter((p) => !p.exempt && !inside(p.holder) && !pending.has(p.holder)).map((p) => p.holder);
    let places = area?.count ?? 0;
    for (const holder of pending) if (!inside(holder)) places++;
    if (newcomers.length > 0 && places + newcomers.length > policy.maxOccupancy) return { allowed: false, reason: 'area_full', holders: newcomers };
  }
  return { allowed: true, violations };
}

/** A grant the area allowed, and the door unlocked for it. */
export interface Grant {
  door: string;
  area: string;
  direction: Direction;
  holders: readonly string[];
  /** Wall ms. */
  at: number;
  /**
   * The grant is the passage: the door has no contact (nothing will say it opened), or it is open already. Else
   * the passage waits for `opened`.
   */
  passesNow: boolean;
}

/** State changes return the facts to audit: the live state is always `replay` of every fact returned so far. */
export interface AreaStep {
  state: AreasState;
  facts: readonly AreaFact[];
}

function passages(pending: readonly PendingPassage[], door: string, at: number): AreaFact[] {
  return pending.map((p) => ({ kind: 'passage', area: p.area, holder: p.holder, direction: p.direction, door, at }));
}

/** After a grant: the passage now (no contact, or the door already open), or pending until the door opens. */
export function granted(state: AreasState, grant: Grant): AreaStep {
  const those = grant.holders.map((holder) => ({ area: grant.area, holder, direction: grant.direction, at: grant.at }));
  if (grant.passesNow) {
    const facts = passages(those, grant.door, grant.at);
    return { state: applyFacts(state, facts), facts };
  }
  // A holder granted again at the same door before it opened: the latest grant stands.
  const kept = (state.pending.get(grant.door) ?? []).filter((p) => !grant.holders.includes(p.holder));
  const pending = new Map(state.pending);
  pending.set(grant.door, [...kept, ...those]);
  return { state: { areas: state.areas, pending }, facts: [] };
}

/** The door's contact opened: its pending grants pass (at the opening). An opening with none (forced, exit button) is no passage. */
export function opened(state: AreasState, door: string, at: number): AreaStep {
  const waiting = state.pending.get(door);
  if (waiting === undefined) return { state, facts: [] };
  const pending = new Map(state.pending);
  pending.delete(door);
  const facts = passages(waiting, door, at);
  return { state: applyFacts({ areas: state.areas, pending }, facts), facts };
}

/** The door locked again: a grant whose door never opened (the unlock ran out) is no passage. */
export function relocked(state: AreasState, door: string): AreasState {
  if (!state.pending.has(door)) return state;
  const pending = new Map(state.pending);
  pending.delete(door);
  return { areas: state.areas, pending };
}

/** A reset (the daily time, or the command): every holder of the area (null: of every area) is unknown again, occupancy 0. */
export function reset(state: AreasState, area: string | null, at: number): AreaStep {
  const facts: AreaFact[] = [{ kind: 'reset', area, at }];
  return { state: applyFacts(state, facts), facts };
}

/** The area's whole state as one fact: replay from it on equals replay from the reset before it. */
export function checkpoint(state: AreasState, area: string, at: number): AreaFact {
  const current = state.areas.get(area);
  const presence = current ? [...current.presence].map(([holder, p]) => ({ holder, ...p })) : [];
  return current ? { kind: 'checkpoint', area, at, since: current.since, presence } : { kind: 'reset', area, at };
}

/**
 * When the area's scheduled reset (`resetAt` "HH:MM" in `timeZone`) fell between its first fact since the last
 * reset and `now`, that instant (the agent was down then: reset it now, with this time); else null. An area with
 * no state has nothing to reset.
 */
export function resetDue(state: AreasState, area: string, now: number, resetAt: string, timeZone: string): number | null {
  const current = state.areas.get(area);
  if (current === undefined) return null;
  const due = nextReset(current.since, resetAt, timeZone);
  return due <= now ? due : null;
}

export interface Occupant {
  holder: string;
  /** When they entered (wall ms). */
  since: number;
  door: string;
}

/** Who is inside, earliest first: the muster list. */
export function occupants(state: AreasState, area: string): Occupant[] {
  const current = state.areas.get(area);
  if (current === undefined) return [];
  const list: Occupant[] = [];
  for (const [holder, p] of current.presence) if (p.inside) list.push({ holder, since: p.at, door: p.door });
  return list.sort((a, b) => a.since - b.since || (a.holder < b.holder ? -1 : 1));
}

export function occupancy(state: AreasState, area: string): number {
  return state.areas.get(area)?.count ?? 0;
}
