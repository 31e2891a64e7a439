import { execFile } from 'node:child_process';

/**
 * The seam an update stops and starts the daemon through: systemd on a board (systemdService below), the
 * daemon as a supervised child in a test root without systemd (childService.ts).
 */
export interface ServiceControl {
  /** Whether the agent's daemon runs now. */
  isActive(): Promise<boolean>;
  /** Stops the program's running units, the daemon first (it locks every relay as it stops; then `relock` runs). */
  stop(): Promise<void>;
  /** Starts the daemon, and what `stop` stopped beside it. */
  start(): Promise<void>;
  /** Why the daemon started last can no longer become healthy (it ended for good), or null while it may. */
  gone(): string | null;
}

/** The units scripts/install.sh installs, the daemon first: both run the program in /opt/door-agent. */
const UNITS = ['door-agent.service', 'door-agent-service.service'] as const;

function systemctl(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('systemctl', args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() });
    });
  });
}

async function mustSystemctl(...args: string[]): Promise<void> {
  const r = await systemctl(...args);
  if (r.code !== 0) throw new Error(`systemctl ${args.join(' ')} failed (exit ${r.code})${r.output ? `: ${r.output}` : ''}`);
}

/**
 * systemd, as scripts/install.sh does it: `systemctl stop` (ExecStopPost relocks every relay), `systemctl start`.
 * Before a start, `reset-failed`: a version that failed fast used up the unit's start limit, and systemd would
 * refuse to start the one switched back to.
 */
export function systemdService(): ServiceControl {
  const stopped = new Set<string>();
  return {
    isActive: async () => (await systemctl('is-active', '--quiet', UNITS[0])).code === 0,
    stop: async () => {
      for (const unit of UNITS) {
        if ((await systemctl('is-active', '--quiet', unit)).code !== 0) continue;
        await mustSystemctl('stop', unit);
        stopped.add(unit);
      }
    },
    start: async () => {
      for (const unit of UNITS) {
        if (unit !== UNITS[0] && !stopped.has(unit)) continue;
        await systemctl('reset-failed', unit);
        await mustSystemctl('start', unit);
      }
    },
    // systemd restarts a daemon that ended (Restart=always): only the bound says it will not come up.
    gone: () => null,
  };
}
