import type { IngestedEvent } from './wireEvent.js';

/** An event as this process's ingest took it: stored now or by another process before (eventId is the row's). */
export interface TakenEvent {
  eventId: number;
  event: IngestedEvent;
}

/**
 * The events this process's ingest takes, as they are committed: what the console's live Events page adds. Every
 * process takes every event on its own session, so each one's console sees each event, whichever stored it.
 */
export class StoredEvents {
  private readonly listeners = new Set<(taken: TakenEvent) => void>();

  subscribe(listener: (taken: TakenEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(taken: TakenEvent): void {
    for (const listener of this.listeners) listener(taken);
  }
}
