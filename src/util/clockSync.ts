import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Written by systemd-timesyncd once the clock has been synchronized (systemd 239+). */
const TIMESYNC_FLAG = '/run/systemd/timesync/synchronized';

export interface ClockSyncOptions {
  rtc: boolean;
  flagFile?: string;
}

// A clean environment: NOTIFY_SOCKET must not reach it (systemd tools report their own errors there).
const TIMEDATECTL_ARGS = ['show', '--property=NTPSynchronized', '--value'];
const TIMEDATECTL_OPTIONS = { encoding: 'utf8' as const, timeout: 2000, env: { PATH: '/usr/local/bin:/usr/bin:/bin', LC_ALL: 'C' } };

/** The answer without asking timedatectl, or null when it must be asked. */
function withoutTimedatectl(options: ClockSyncOptions): boolean | null {
  if (options.rtc) return true;
  if (existsSync(options.flagFile ?? TIMESYNC_FLAG)) return true;
  return null;
}

/**
 * Whether the wall clock can be believed: the board keeps time across power cuts (a battery-backed RTC, config
 * `agent.rtc`), systemd-timesyncd has synchronized it, or the kernel says so (`timedatectl`, which also covers
 * chrony and ntpd). Asked at start (before a timed unlock would be resumed, before the unlock schedule follows
 * its hours); isClockSynchronizedLater asks the same without blocking, for the re-checks while it is not.
 */
export function isClockSynchronized(options: ClockSyncOptions): boolean {
  const quick = withoutTimedatectl(options);
  if (quick !== null) return quick;
  try {
    const result = spawnSync('timedatectl', TIMEDATECTL_ARGS, TIMEDATECTL_OPTIONS);
    return result.status === 0 && result.stdout.trim() === 'yes';
  } catch {
    return false;
  }
}

/** isClockSynchronized, without blocking the event loop on timedatectl. */
export function isClockSynchronizedLater(options: ClockSyncOptions): Promise<boolean> {
  const quick = withoutTimedatectl(options);
  if (quick !== null) return Promise.resolve(quick);
  return new Promise((resolve) => {
    try {
      execFile('timedatectl', TIMEDATECTL_ARGS, TIMEDATECTL_OPTIONS, (err, stdout) => resolve(err === null && stdout.trim() === 'yes'));
    } catch {
      resolve(false);
    }
  });
}
