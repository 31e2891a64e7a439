import { readFileSync } from 'node:fs';

/**
 * The system's monotonic clock since boot and the boot it belongs to: what the offline limit measures the cache's
 * age with (core/cacheAge.ts). Unlike Clock.monoNow (performance.now(), which starts at 0 with each process), this
 * reading is the same for every process of one boot, so a daemon restarted within a boot measures exactly, and no
 * clock setting moves it. Injected: tests give their own.
 */
export interface BootClock {
  /** /proc/sys/kernel/random/boot_id; null when it cannot be read (the age then falls back to the wall clock). */
  bootId(): string | null;
  /** CLOCK_MONOTONIC in ms (Node's hrtime reads it): time since boot, not counting a suspend. */
  monoNow(): number;
}

const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

/** The boot id from `file`, null when it cannot be read (not Linux, a sandbox without /proc). */
function readBootId(file = BOOT_ID_FILE): string | null {
  try {
    const id = readFileSync(file, 'utf8').trim();
    return id.length > 0 ? id : null;
  } catch {
    return null;
  }
}

/** The system's: the boot id is read once (it does not change while the process lives). */
export const systemBootClock: BootClock = (() => {
  let id: string | null | undefined;
  return {
    bootId: () => {
      if (id === undefined) id = readBootId();
      return id;
    },
    monoNow: () => Number(process.hrtime.bigint() / 1000n) / 1000,
  };
})();
