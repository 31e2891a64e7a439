import type { Direction } from '../core/areas.js';
import type { Credential } from '../readers/reader.js';
import { DoorAgentError } from '../util/errors.js';

/** What a learn session is told of each credential its reader hands on. */
export type LearnListener = (credential: Credential) => void;

/**
 * A door's learn sessions (the control socket's `reader learn` and `learn-card`): while one is open on a reader,
 * that reader's credentials go to it and are not decided; the door's other reader, and every other door, decide
 * as ever. One session per reader at a time.
 */
export class LearnSessions {
  private readonly open = new Map<Direction, { listener: LearnListener; owner: string }>();

  /** Hands `credential` to the session open on its reader: true when there is one (the door does not decide it). */
  take(credential: Credential, direction: Direction): boolean {
    const session = this.open.get(direction);
    if (!session) return false;
    session.listener(credential);
    return true;
  }

  /** Opens a session on one reader (`owner` names who, for the refusal of a second one); returns its close. */
  start(direction: Direction, owner: string, listener: LearnListener, readerName: string): () => void {
    const current = this.open.get(direction);
    if (current) throw new DoorAgentError(`${readerName} is already in a learn session (${current.owner}): wait for it to end`);
    const session = { listener, owner };
    this.open.set(direction, session);
    return () => {
      if (this.open.get(direction) === session) this.open.delete(direction);
    };
  }

  /** Ends every session (the door stops). */
  clear(): void {
    this.open.clear();
  }
}
