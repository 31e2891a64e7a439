import type { RuntimeStatus } from '../store/runtimeStatus.js';
import { dataDirHolder } from '../system/dataDirLock.js';

export type DaemonView = { running: true; pid: number | null; since: string | null } | { running: false; stoppedAt: string | null };

/**
 * Whether a daemon runs on this data directory: one holding the directory's lock does (system/dataDirLock.ts),
 * whatever state.db says (it has not written its status yet, or another process wrote over it); without the
 * lock (a daemon from before the lock existed), state.db's record of a live process.
 */
export function daemonView(dataDir: string, runtime: RuntimeStatus | undefined, alive: (pid: number) => boolean): DaemonView {
  const holder = dataDirHolder(dataDir);
  const recorded = runtime !== undefined && runtime.stoppedAt === null && alive(runtime.pid);
  if (holder) {
    const pid = holder.pid ?? (recorded ? runtime.pid : null);
    return { running: true, pid, since: recorded && runtime.pid === pid ? runtime.startedAt : null };
  }
  if (recorded) return { running: true, pid: runtime.pid, since: runtime.startedAt };
  return { running: false, stoppedAt: runtime?.stoppedAt ?? null };
}

/** The status line's words for a running daemon. */
export function runningText(view: { pid: number | null; since: string | null }): string {
  return `running (pid ${view.pid ?? 'unknown'}${view.since ? `, since ${view.since}` : ''})`;
}
