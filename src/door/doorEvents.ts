import type { LockSnapshot } from './lockController.js';
import type { LockStateName } from '../core/relay.js';
import type { AlarmType } from './doorRuntime.js';

/** What the doors tell the rest of the agent (the audit log, MQTT), by name, with typed arguments. */
export interface DoorEventMap {
  /** A door's lock state or deadline changed (after the relay moved). */
  lock: [door: string, snapshot: LockSnapshot, previous: LockStateName];
  /** A door's position (contact) changed, or another part of its published state (tamper, lockdown, schedule). */
  position: [door: string];
  /** An alarm was recorded: published at once on the door's alarm topic. */
  alarm: [door: string, type: AlarmType, data: Record<string, unknown>, at: number];
  /** A door's reader connected or went away. */
  reader: [door: string, connected: boolean];
}

type Listener<A extends unknown[]> = (...args: A) => void;

/**
 * A small typed event emitter: listeners are attached once the components exist, so nothing needs a callback
 * into an object that may not have been built yet. A listener that throws is reported, never lets the others
 * (or the door) down.
 */
export class DoorEvents {
  private readonly listeners: { [K in keyof DoorEventMap]: Array<Listener<DoorEventMap[K]>> } = { lock: [], position: [], alarm: [], reader: [] };

  constructor(private readonly onListenerError: (err: unknown, event: keyof DoorEventMap) => void) {}

  on<K extends keyof DoorEventMap>(event: K, listener: Listener<DoorEventMap[K]>): () => void {
    const list = this.listeners[event] as Array<Listener<DoorEventMap[K]>>;
    list.push(listener);
    return () => {
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
    };
  }

  emit<K extends keyof DoorEventMap>(event: K, ...args: DoorEventMap[K]): void {
    for (const listener of [...(this.listeners[event] as Array<Listener<DoorEventMap[K]>>)]) {
      try {
        listener(...args);
      } catch (err) {
        this.onListenerError(err, event);
      }
    }
  }
}
