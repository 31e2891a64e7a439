import type { Logger } from 'pino';
import * as areas from '../core/areas.js';
import type { AreaVerdict, AreasState, Direction, Occupant, PassageParty } from '../core/areas.js';
import { nextReset } from '../core/dailyReset.js';
import { checkpointData, readAreaFacts, resetData, type PassageRecord } from '../store/areaFacts.js';
import type { Db } from '../store/database.js';
import type { NewEvent, WireEvent } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AreaOptions } from './options.js';
import type { Component } from '../lifecycle.js';
import { withProps } from '../core/objects.js';

export interface AreaRuntimeDeps {
  areas: readonly AreaOptions[];
  /** agent.timezone: the daily resets are local times. */
  timezone: string;
  /** agent.maxEvents: a checkpoint is written before an area's last reset or checkpoint could be evicted. */
  maxEvents: number;
  /** state.db, read once at start (the replay). */
  state: () => Db;
  /** Records an area event (reset, checkpoint): the store's audit log. */
  append: (event: NewEvent) => WireEvent | null;
  clock: Clock;
  timers: Timers;
  logger: Logger;
}

/** A daily reset looks at the wall clock at least this often: a step of the clock moves it as it should. */
const RESET_CHECK_MS = 60_000;

/**
 * The areas of the agent at work (issue 26, docs/areas.md): anti-passback and occupancy as one state, a pure fold
 * (core/areas.ts) over the facts the audit log holds. At start the state is replayed from state.db; each change
 * returns its facts, which the door records in its own audit event (a passage) or this records (a reset, a
 * checkpoint): the live state is always the replay of the log. Resets fall daily (`resetAt`, agent.timezone)
 * and on command; a checkpoint is written before the facts a replay needs could be evicted (agent.maxEvents).
 */
export class AreaRuntime implements Component {
  readonly name = 'areas';
  private state: AreasState = areas.NO_AREAS;
  private readonly policies = new Map<string, AreaOptions>();
  private readonly areaOfDoor = new Map<string, AreaOptions>();
  /** Per area: the seq of its last reset or checkpoint in the log (0: none). */
  private readonly bases = new Map<string, number>();
  private readonly resetTimers = new Map<string, { timer: unknown; due: number }>();
  private readonly listeners: Array<(area: string) => void> = [];
  private started = false;

  constructor(private readonly deps: AreaRuntimeDeps) {
    for (const area of deps.areas) {
      this.policies.set(area.id, area);
      for (const door of area.doors) this.areaOfDoor.set(door, area);
    }
  }

  /** The state replayed from the log, the resets missed while stopped made, the daily resets armed. */
  start(): void {
    const ids = [...this.policies.keys()];
    const { facts, bases } = readAreaFacts(this.deps.state(), ids);
    this.state = areas.replay(facts);
    for (const [area, seq] of bases) this.bases.set(area, seq);
    this.started = true;
    const now = this.deps.clock.wallNow();
    for (const area of this.policies.values()) {
      const due = area.resetAt === null ? null : areas.resetDue(this.state, area.id, now, area.resetAt, this.deps.timezone);
      if (due !== null) this.reset(area.id, 'schedule (missed while the agent was stopped)', { scheduled: new Date(due).toISOString() });
      this.armReset(area);
      this.deps.logger.info({ area: area.id, count: areas.occupancy(this.state, area.id) }, 'area state replayed from the audit log');
    }
  }

  stop(): void {
    for (const { timer } of this.resetTimers.values()) this.deps.timers.clearTimeout(timer);
    this.resetTimers.clear();
    this.started = false;
  }

  /** The area a door leads into, or undefined. */
  areaOf(door: string): AreaOptions | undefined {
    return this.areaOfDoor.get(door);
  }

  area(id: string): AreaOptions | undefined {
    return this.policies.get(id);
  }

  get ids(): string[] {
    return [...this.policies.keys()];
  }

  /** The areas as configured. */
  get configured(): readonly AreaOptions[] {
    return this.deps.areas;
  }

  /** `listener` hears of each area whose occupancy or list changed (the muster topic, status). */
  onChange(listener: (area: string) => void): void {
    this.listeners.push(listener);
  }

  /** The area's verdict on a passage the access decision granted at `door` (changes nothing). */
  decide(area: AreaOptions, door: string, direction: Direction, holders: readonly PassageParty[]): AreaVerdict {
    return areas.decidePassage(this.state, area, { door, direction, holders, now: this.deps.clock.wallNow() });
  }

  /**
   * The door unlocked for a grant the area allowed: the passages to record in its access_granted now (`passesNow`:
   * no contact, or open already), else none (pending until the door opens).
   */
  granted(grant: Omit<areas.Grant, 'at'>): PassageRecord[] {
    return this.apply(areas.granted(this.state, withProps(grant, { at: this.deps.clock.wallNow() })));
  }

  /** The door's contact opened: its pending grants pass now; the passages to record in its door_opened. */
  opened(door: string): PassageRecord[] {
    return this.apply(areas.opened(this.state, door, this.deps.clock.wallNow()));
  }

  /** The door locked again: a grant it had not opened for is no passage. */
  relocked(door: string): void {
    this.state = areas.relocked(this.state, door);
  }

  /** Resets one area (null: every area) now: recorded as area_reset, `by` who or what asked. */
  reset(area: string | null, by: string, extra: Record<string, unknown> = {}): void {
    const at = this.deps.clock.wallNow();
    const step = areas.reset(this.state, area, at);
    this.write({ type: 'area_reset', door: null, at, data: withProps(resetData(area), { by, ...extra }), durable: true });
    this.state = step.state;
    this.deps.logger.info({ area: area ?? 'every area', by }, 'area reset: anti-passback and occupancy start again');
    for (const id of area === null ? this.policies.keys() : [area]) this.changed(id);
  }

  /** Who is inside, earliest first. */
  occupants(area: string): Occupant[] {
    return areas.occupants(this.state, area);
  }

  occupancy(area: string): number {
    return areas.occupancy(this.state, area);
  }

  /**
   * Each event written: an area whose last reset or checkpoint is half the log behind gets a checkpoint, so that a
   * replay never needs an evicted event (docs/areas.md). An area with no state needs none: nothing to lose.
   */
  onEventWritten(event: WireEvent): void {
    if (!this.started) return;
    if (event.type === 'area_reset' || event.type === 'area_checkpoint') {
      const area = event.area;
      if (area === null) for (const id of this.policies.keys()) this.bases.set(id, event.seq);
      else if (typeof area === 'string') this.bases.set(area, event.seq);
      return;
    }
    for (const [id, base] of this.bases) {
      if (event.seq - base < this.deps.maxEvents / 2) continue;
      const fact = areas.checkpoint(this.state, id, this.deps.clock.wallNow());
      if (fact.kind !== 'checkpoint') {
        this.bases.set(id, event.seq);
        continue;
      }
      this.bases.set(id, event.seq); // until the checkpoint's own seq is known (a busy database writes it later)
      this.write({ type: 'area_checkpoint', door: null, at: fact.at, data: checkpointData(fact), durable: true });
    }
  }

  private apply(step: areas.AreaStep): PassageRecord[] {
    this.state = step.state;
    const passages: PassageRecord[] = [];
    const touched = new Set<string>();
    for (const fact of step.facts) {
      if (fact.kind !== 'passage') continue;
      passages.push({ area: fact.area, holder: fact.holder, direction: fact.direction, at: new Date(fact.at).toISOString() });
      touched.add(fact.area);
    }
    for (const area of touched) this.changed(area);
    return passages;
  }

  private write(event: NewEvent): void {
    try {
      this.deps.append(event);
    } catch (err) {
      this.deps.logger.error({ err, type: event.type }, 'cannot record an area event');
    }
  }

  private changed(area: string): void {
    for (const listener of this.listeners) {
      try {
        listener(area);
      } catch (err) {
        this.deps.logger.error({ err, area }, 'an area listener failed');
      }
    }
  }

  /** The next daily reset of an area, checked each minute against the wall clock. */
  private armReset(area: AreaOptions): void {
    if (area.resetAt === null) return;
    const resetAt = area.resetAt;
    const due = nextReset(this.deps.clock.wallNow(), resetAt, this.deps.timezone);
    const wait = () => {
      const now = this.deps.clock.wallNow();
      if (now >= due) {
        this.resetTimers.delete(area.id);
        // An area nobody passed since its last reset has nothing to forget: no event.
        if (this.state.areas.has(area.id)) this.reset(area.id, 'schedule', { scheduled: new Date(due).toISOString() });
        this.armReset(area);
        return;
      }
      this.resetTimers.set(area.id, { timer: this.deps.timers.setTimeout(wait, Math.min(due - now, RESET_CHECK_MS)), due });
    };
    wait();
  }
}
