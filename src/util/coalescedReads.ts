/**
 * Reads of one kind asked for while one is in flight wait for it to end, then go to the database together, as one
 * read of every key asked for meanwhile. Each caller's answer comes from a read that started after it asked, so
 * nothing it is given is older than its question (a change committed before it asked is in the answer). Idle, a
 * read goes at once, alone; under a storm (1,000 doors fetching a change at once) the reads become a few large
 * ones instead of a round trip per request.
 */
export class CoalescedReads<K, V> {
  /** The keys asked for since the read in flight started, with their callers. */
  private waiting = new Map<K, Array<{ resolve: (value: V) => void; reject: (err: unknown) => void }>>();
  private inFlight = false;

  /** `readMany` answers every key it is given: a Map from each to its value (a key missing from it reads as `absent`). */
  constructor(
    private readonly readMany: (keys: K[]) => Promise<Map<K, V>>,
    private readonly absent: V,
  ) {}

  read(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      const callers = this.waiting.get(key);
      if (callers) callers.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      if (!this.inFlight) this.start();
    });
  }

  private start(): void {
    const batch = this.waiting;
    this.waiting = new Map();
    this.inFlight = true;
    new Promise<Map<K, V>>((resolve) => resolve(this.readMany([...batch.keys()])))
      .then(
        (values) => {
          for (const [key, callers] of batch) for (const caller of callers) caller.resolve(values.has(key) ? values.get(key)! : this.absent);
        },
        (err: unknown) => {
          for (const callers of batch.values()) for (const caller of callers) caller.reject(err);
        },
      )
      .finally(() => {
        this.inFlight = false;
        if (this.waiting.size > 0) this.start();
      });
  }
}
