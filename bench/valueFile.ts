import { readSync, watch, writeSync } from 'node:fs';
import { percentile } from './stats.js';

/** The first byte of a GPIO value file ('0' or '1'), read through an open descriptor. */
export function level(fd: number): string {
  const buf = Buffer.alloc(1);
  readSync(fd, buf, 0, 1, 0);
  return buf.toString();
}

/**
 * Sets a simulated input (a door contact) through an open descriptor, in place, as sysfs changes a value file. Not
 * writeFileSync: its truncating rewrite makes ext4 flush the file at close (auto_da_alloc), which waits behind every
 * other write to the disk, so under a sync's writes the benchmark's own write took up to 0.5 s of a timed relock.
 */
export function setLevel(fd: number, value: '0' | '1'): void {
  writeSync(fd, `${value}\n`, 0);
}

/**
 * Runs `act` and resolves with the milliseconds until the value file reads `want`, seen through inotify
 * (fs.watch): the clock starts right before `act`.
 */
export function timeUntilLevel(valueFile: string, fd: number, want: string, act: () => void, timeoutMs = 3000): Promise<number> {
  return new Promise((resolve, reject) => {
    let done = false;
    const watcher = watch(valueFile, () => check());
    const timer = setTimeout(() => finish(new Error(`${valueFile} did not become ${want} within ${timeoutMs} ms`)), timeoutMs);
    const started = performance.now();
    function finish(err: Error | null, ms = 0) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      watcher.close();
      if (err) reject(err);
      else resolve(ms);
    }
    function check() {
      if (level(fd) === want) finish(null, performance.now() - started);
    }
    act();
    check();
  });
}

export function p50p99(samples: number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(samples).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}
