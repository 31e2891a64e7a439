import type { SignedRelease } from '../../api/fleet.js';
import { DoorAgentError } from '../../util/errors.js';

/**
 * How one layout of the program is replaced by a release and put back (docs/fleet.md, "Signed updates"): the
 * installer's (/opt/door-agent, installerSwitch.ts) or the Debian package's (/usr/lib/door-agent, packageSwitch.ts).
 * applyUpdate.ts runs the same steps for both: prepare beside the running program, switch with the daemon stopped,
 * keep once healthy, or switch back.
 */
export interface ProgramSwitch {
  /** The version installed now. */
  readonly installed: string;
  /** Where root's copy of the bundle is made: a fresh directory with this prefix (update/incoming.ts). */
  readonly incomingPrefix: string;
  /** The verified bundle (root's copy) made ready beside the running program; nothing replaced. Returns what it did, to say. */
  prepare(bundle: string, signed: SignedRelease): Promise<string>;
  /** What prepare made, removed (the update ends before its switch). */
  discard(): void;
  /**
   * The daemon stopped: the new version in place. When it fails, the program is as it was; or, when even that
   * failed, a SwitchStranded saying how to put it back by hand (the daemon is then left stopped).
   */
  forward(): Promise<string>;
  /** The new version is healthy: what it replaced kept for a switch back by hand. Returns where. */
  keep(): string;
  /** The daemon stopped: the version installed before in place again, what prepare made removed. */
  back(): Promise<string>;
  /** How an operator switches back by hand when `back` failed. */
  byHand(): string;
}

/** A switch that could neither go forward nor undo itself: the program is half replaced, and the daemon must stay stopped. */
export class SwitchStranded extends DoorAgentError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'SwitchStranded';
  }
}
