import { spawnSync } from 'node:child_process';
import { close, closeSync, mkdtempSync, open, openSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Holds every thread of libuv's pool (zlib's decompression, fs calls, serialport's own reads run there) for `ms`:
 * each is blocked opening a FIFO (in a new directory in `dir`) for reading until a writer comes. The writers
 * (opened read-write, which never blocks) stay until every reader got through, so no pool thread is left blocked.
 * Resolves when the pool is free again.
 */
export function holdThreadPool(dir: string, ms: number): Promise<void> {
  const fifoDir = mkdtempSync(join(dir, 'pool-'));
  const fifos = Array.from({ length: 16 }, (_, i) => join(fifoDir, `fifo-${i}`));
  const readers = fifos.map((fifo) => {
    const made = spawnSync('mkfifo', [fifo]);
    if (made.status !== 0) throw new Error(`mkfifo ${fifo} failed: ${made.stderr}`);
    return new Promise<void>((resolve) => open(fifo, 'r', (err, fd) => (err ? resolve() : close(fd, () => resolve()))));
  });
  return new Promise<void>((resolve) =>
    setTimeout(() => {
      const writers = fifos.map((fifo) => openSync(fifo, 'r+'));
      void Promise.all(readers).then(() => {
        for (const fd of writers) closeSync(fd);
        resolve();
      });
    }, ms),
  );
}

/** holdThreadPool, and whether the pool is free again yet (a test asserts that what it waited for came before). */
export function watchedThreadPoolHold(dir: string, ms: number): { readonly released: boolean; done: Promise<void> } {
  const hold = { released: false, done: Promise.resolve() };
  hold.done = holdThreadPool(dir, ms).then(() => {
    hold.released = true;
  });
  return hold;
}
