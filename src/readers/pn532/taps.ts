/**
 * One tap per presentation, pure: the PN532 is polled, so a card held on the reader is seen at every poll. A UID is a
 * new tap when it differs from the one held, or when the reader has reported no target for `releaseMs` since it was
 * last seen (a card lifted for a moment and put back within that time is the same tap). Times are monotonic ms.
 */
export class TapFilter {
  private held: string | null = null;
  /** When the field was first seen empty after the held card (null: the card is still there). */
  private emptySince: number | null = null;

  constructor(private readonly releaseMs: number) {}

  /** A poll's result: the UID seen (as a key, e.g. its hex), or null for no target. True when it is a new tap. */
  seen(uid: string | null, now: number): boolean {
    if (uid === null) {
      if (this.held !== null && this.emptySince === null) this.emptySince = now;
      if (this.held !== null && this.emptySince !== null && now - this.emptySince >= this.releaseMs) this.release();
      return false;
    }
    const released = this.emptySince !== null && now - this.emptySince >= this.releaseMs;
    const fresh = uid !== this.held || released;
    this.held = uid;
    this.emptySince = null;
    return fresh;
  }

  /** Forgets the held card (the reader went away: a card seen after it comes back is a new tap). */
  release(): void {
    this.held = null;
    this.emptySince = null;
  }
}
