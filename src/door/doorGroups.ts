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
 * gate (`gate`) at a granted tap, at its exit button, at a remote unlock and for its unlock schedule, in the turn of
 * the event loop that unlocks, so two doors of an interlock cannot both pass the check.
 */
export class DoorGroups {
  private readonly interlockOf: ReadonlyMap<string, readonly string[]>;
  private readonly gates = new Map<string, DoorGate>();
  /** The doors started (their state known): an interlocked door's unlock schedule starts once all of its interlock have. */
  private readonly started = new Set<string>();

  constructor(private readonly deps: DoorGroupsDeps) {
    this.interlockOf = interlockIndex(deps.interlocks);
  }

  /** The door's gate, or null when it is in no area, no interlock, and has no two-person rule. */
  gate(door: DoorOptions): DoorGate | null {
    const area = this.deps.areas?.areaOf(door.uuid) ?? null;
    const interlock = this.interlockOf.get(door.uuid) ?? null;
    if (area === null && interlock === null && door.twoPerson === undefined) return null;
    const gate = new DoorGate(
      door,
      withProps(this.deps, { area, interlock, started: (uuid: string) => this.started.has(uuid), markStarted: (uuid: string) => this.doorStarted(uuid) }),
    );
    this.gates.set(door.uuid, gate);
    return gate;
  }

  /**
   * A door's lock or position changed, or it started: the doors of its interlock that wait for their gate (an unlock
   * schedule, docs/areas.md) look again.
   */
  changed(door: string): void {
    for (const other of this.interlockOf.get(door) ?? []) if (other !== door) this.gates.get(other)?.partnerChanged();
  }

  /** A door has started (its lock and contact are known). */
  private doorStarted(door: string): void {
    this.started.add(door);
    this.changed(door);
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
  /** What waits for this gate (the door's unlock schedule), told when another door of its interlock changes. */
  private readonly waiters: Array<() => void> = [];
  /** Run once every door of the interlock has started (at once without an interlock). */
  private readonly pendingStart: Array<() => void> = [];

  constructor(
    private readonly door: DoorOptions,
    private readonly deps: DoorGroupsDeps & {
      area: AreaOptions | null;
      interlock: readonly string[] | null;
      started: (uuid: string) => boolean;
      markStarted: (uuid: string) => void;
    },
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
    const violations = area && areas ? areas.decide(area, this.door.uuid, direction, this.partiesOf(holders)) : null;
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

  /**
   * The door that keeps this one from unlocking now (its interlock), or null. Every path that unlocks asks it: a
   * tap, the exit button and a remote unlock as they are (the emergency release overrides the interlock for them:
   * people leaving in a fire), the unlock schedule through `scheduleBlocker`.
   */
  blocker(): string | null {
    return this.interlockBlocker(true);
  }

  /**
   * The same gate for the unlock schedule's hold (its hours, their resumption after a lockdown or as the emergency
   * input clears, first person in): a timetable is not egress, so no release overrides the interlock here and a
   * door released counts as the unlocked door it is. As the input clears, every release ends in the same turn, one
   * door after the other: a schedule there waits for the others to lock instead of unlocking beside them.
   */
  scheduleBlocker(): string | null {
    return this.interlockBlocker(false);
  }

  private interlockBlocker(emergencyOverrides: boolean): string | null {
    const group = this.deps.interlock;
    if (group === null) return null;
    const states = new Map<string, InterlockDoorState>();
    for (const uuid of group) {
      const state = this.deps.doorState(uuid);
      if (state) states.set(uuid, state);
    }
    return interlockBlocker(group, states, this.door.uuid, emergencyOverrides && group.some((uuid) => this.deps.released(uuid)));
  }

  /** The door has started: its lock and contact are known to the others of its interlock. */
  started(): void {
    this.deps.markStarted(this.door.uuid);
  }

  /** `listener` runs when another door of the interlock changes (it may no longer block). */
  onPartnerChange(listener: () => void): void {
    this.waiters.push(listener);
  }

  /** @internal DoorGroups: another door of the interlock changed. */
  partnerChanged(): void {
    const ready = this.pendingStart.length > 0 && this.interlockStarted();
    for (const run of ready ? this.pendingStart.splice(0) : []) run();
    for (const listener of this.waiters) listener();
  }

  /**
   * Runs `fn` once every door of the interlock has started (at once when they have, or without an interlock): a
   * door not started yet blocks (its state is not known), and the unlock schedule should not record that as a wait.
   */
  whenInterlockStarted(fn: () => void): void {
    if (this.interlockStarted()) fn();
    else this.pendingStart.push(fn);
  }

  private interlockStarted(): boolean {
    return (this.deps.interlock ?? []).every((uuid) => uuid === this.door.uuid || this.deps.started(uuid));
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
    const verdict = this.deps.areas.decide(area, this.door.uuid, direction, this.partiesOf(holders));
    if (verdict.allowed) return null;
    return { outcome: 'refused', reason: verdict.reason, detail: { area: area.id, refused: verdict.holders.map(holderRefOf) } };
  }
}
