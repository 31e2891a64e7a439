/** Polls until `predicate` holds (it may ask a database); returns the ms it took. Fails naming `what` after `timeoutMs`. */
export async function waitUntil(predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now();
  while (!(await predicate())) {
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - started;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
