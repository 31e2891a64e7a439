export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `predicate` holds; throws naming the benchmark and what did not happen. */
export async function waitFor(bench: string, predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${bench} benchmark: ${what} not within ${timeoutMs} ms`);
    await sleep(5);
  }
}
