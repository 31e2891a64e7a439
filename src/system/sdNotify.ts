import { createRequire } from 'node:module';
import { addonPath } from '../util/addonPath.js';
import { DoorAgentError } from '../util/errors.js';

/** Sends one sd_notify state (`READY=1`, `WATCHDOG=1`, `STOPPING=1`) to systemd's socket. */
export type Notify = (state: string) => void;

interface Addon {
  notify(socketPath: string, state: string): void;
}

/**
 * The notifier for `NOTIFY_SOCKET`, or null when the agent does not run under systemd's Type=notify (nothing
 * is sent then). The datagram is sent by a small addon built from native/sd_notify.c at `npm ci`.
 */
export function systemdNotifier(socketPath: string | undefined): Notify | null {
  if (!socketPath) return null;
  const path = addonPath(import.meta.dirname, 'sd_notify');
  let addon: Addon;
  try {
    addon = createRequire(import.meta.url)(path) as Addon;
  } catch (err) {
    throw new DoorAgentError(
      `NOTIFY_SOCKET is set (systemd Type=notify) but the sd_notify addon cannot be loaded from ${path}: ` +
        'run npm ci (or npm rebuild) in the door-agent directory to build it',
      { cause: err },
    );
  }
  return (state) => addon.notify(socketPath, state);
}
