import { holderKey, holderRefOf, type Direction, type PassageParty } from '../core/areas.js';
import type { HolderRef } from '../core/decision.js';
import { interlockBlocker, interlockIndex, type InterlockDoorState } from '../core/interlock.js';
import { twoPersonTap, type TwoPersonWaiting } from '../core/twoPerson.js';
import type { PassageRecord } from '../store/areaFacts.js';
import type { Clock } from '../util/clock.js';
import type { AreaRuntime } from './areaRuntime.js';
import type { AreaOptions, DoorOptions, InterlockOptions } from './options.js';
import { withProps } from '../core/objects.js';

export interface DoorGroupsDeps {
  interlocks: readonly InterlockOptions[];
  /** The agent's areas at work (null: none configured). */
  areas: AreaRuntime | null;
  /** A door's lock and contact now; undefined when not known (not started): it then blocks its interlock. */
  doorState: (uuid: string) => InterlockDoorState | undefined;
  /** Whether the emergency input holds a door released now: the interlock gives way to it. */
  released: (uuid: string) => boolean;
  clock: Clock;
}

/** A holder granted at a tap: `exempt` (a responder, a grant under duress) from anti-passback and the maximum. */
export interface TapParty {
  ref: HolderRef;
  exempt: boolean;
}

export type GroupDenyReason = 'interlock' | 'passback' | 'area_full';

/** What the door's groups say of a tap the access decision granted. */
export type TapOutcome =
  /** Unlock, for these holders (a two-person door's: both); `violations`: soft anti-passback lets them through. */
  | { outcome: 'unlock'; holders: readonly TapParty[]; firstPerson: readonly HolderRef[] | null; area: AreaOptions | null; violations: readonly HolderRef[] }
  /** Refused; `detail` goes into the access_denied event (the area, the holders refused, the door that blocks). */
  | { outcome: 'refused'; reason: GroupDenyReason; detail: Record<string, unknown> }
  /** A two-person door's first person (again, when `restarted`): acknowledged at the reader, the door stays locked. */
  | { outcome: 'awaiting'; restarted: boolean; windowSeconds: number };

/**
 * The site's doors that work together (issue 26, docs/areas.md), in one place: the interlocks (a mantrap), the
 * two-person doors' first persons waiting, and the areas (anti-passback, occupancy: AreaRuntime). A door asks its
 * gate (`gate`) at a granted tap, at its exit button and at a remote unlock, in the turn of the event loop that
 * unlocks, so two doors of an interlock cannot both pass the check.
 */
export class DoorGroups {
  private readonly interlockOf: ReadonlyMap<string, readonly string[]>;

  constructor(private readonly deps: DoorGroupsDeps) {
    this.interlockOf = interlockIndex(deps.interlocks);
  }

  /** The door's gate, or null when it is in no area, no interlock, and has no two-person rule. */
  gate(door: DoorOptions): DoorGate | null {
    const area = this.deps.areas?.areaOf(door.uuid) ?? null;
    const interlock = this.interlockOf.get(door.uuid) ?? null;
    if (area === null && interlock === null && door.twoPerson === undefined) return null;
    return new DoorGate(door, withProps(this.deps, { area, interlock }));
  }

  /** A door locked again: a grant it had not opened for is no passage. */
  relocked(door: string): void {
    this.deps.areas?.relocked(door);
  }
}

const keyOf = (party: TapParty) => holderKey(party.ref);

/** One door's part of the groups. */
export class DoorGate {
  /** The first person waiting at a two-person door, per reader (monotonic times). */
  private readonly waiting = new Map<Direction, { waiting: TwoPersonWaiting; parties: readonly TapParty[] }>();

  constructor(
    private readonly door: DoorOptions,
    private readonly deps: DoorGroupsDeps & { area: AreaOptions | null; interlock: readonly string[] | null },
  ) {}

  /**
   * A tap the access decision granted, in the order of docs/areas.md ("At a tap"): the area (anti-passback, the
   * maximum) for this tap's holders; the two-person rule (the first person waits; the second goes on with both,
   * checked by the area together); the interlock. The caller unlocks at once on `unlock`, then calls `unlocked`.
   */
  tap(direction: Direction, parties: readonly TapParty[]): TapOutcome {
    const alone = this.areaVerdict(direction, parties);
    if (alone) return alone;
    let holders = parties;
    let firstPerson: readonly HolderRef[] | null = null;
    const rule = this.door.twoPerson;
    if (rule) {
      const now = this.deps.clock.monoNow();
      const held = this.waiting.get(direction) ?? null;
      const step = twoPersonTap(held?.waiting ?? null, parties.map(keyOf), now, rule.windowSeconds);
      if (step.outcome === 'awaiting_second_person') {
        // The same person again keeps their own parties; a new first person replaces one whose window passed.
        this.waiting.set(direction, { waiting: step.waiting, parties: step.restarted && held ? held.parties : parties });
        return { outcome: 'awaiting', restarted: step.restarted, windowSeconds: rule.windowSeconds };
      }
      this.waiting.delete(direction);
      const first = held?.parties ?? step.first.map((key) => ({ ref: holderRefOf(key), exempt: false }));
      firstPerson = first.map((p) => p.ref);
      holders = [...first, ...parties];
      const together = this.areaVerdict(direction, holders);
      if (together) return together;
    }
    const blocker = this.blocker();
    if (blocker !== null) return { outcome: 'refused', reason: 'interlock', detail: { blocked_by: blocker } };
    const { area, areas } = this.deps;
    const violations = area && areas ? areas.decide(area, direction, this.partiesOf(holders)) : null;
    return {
      outcome: 'unlock',
      holders,
      firstPerson,
      area,
      violations: violations?.allowed ? violations.violations.map(holderRefOf) : [],
    };
  }

  /** The relay moved for an `unlock`: the passages to record in the access_granted now (none: pending until the door opens). */
  unlocked(outcome: Extract<TapOutcome, { outcome: 'unlock' }>, direction: Direction): PassageRecord[] {
    const { area } = outcome;
    const { areas } = this.deps;
    if (area === null || areas === null) return [];
    const passesNow = this.door.contact === undefined || this.deps.doorState(this.door.uuid)?.open === true;
    return areas.granted({ door: this.door.uuid, area: area.id, direction, holders: outcome.holders.map(keyOf), passesNow });
  }

  /** The door that keeps this one from unlocking now (its interlock), or null; the emergency release overrides it. */
  blocker(): string | null {
    const group = this.deps.interlock;
    if (group === null) return null;
    const states = new Map<string, InterlockDoorState>();
    for (const uuid of group) {
      const state = this.deps.doorState(uuid);
      if (state) states.set(uuid, state);
    }
    return interlockBlocker(
      group,
      states,
      this.door.uuid,
      group.some((uuid) => this.deps.released(uuid)),
    );
  }

  /** The contact opened: the passages of the grants waiting for it (to record in the door_opened). */
  opened(): PassageRecord[] {
    return this.deps.areas?.opened(this.door.uuid) ?? [];
  }

  private partiesOf(holders: readonly TapParty[]): PassageParty[] {
    return holders.map((p) => ({ holder: keyOf(p), exempt: p.exempt }));
  }

  /** A refusal by the area (hard anti-passback, the maximum), or null when it lets these holders through. */
  private areaVerdict(direction: Direction, holders: readonly TapParty[]): TapOutcome | null {
    const area = this.deps.area;
    if (area === null || this.deps.areas === null) return null;
    const verdict = this.deps.areas.decide(area, direction, this.partiesOf(holders));
    if (verdict.allowed) return null;
    return { outcome: 'refused', reason: verdict.reason, detail: { area: area.id, refused: verdict.holders.map(holderRefOf) } };
  }
}
