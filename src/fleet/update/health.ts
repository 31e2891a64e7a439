import type { Clock } from '../../util/clock.js';
import type { ServiceControl } from './serviceControl.js';

/** What the daemon answers to its control socket's `health` action (control/request.ts healthFactsSchema). */
export interface DaemonHealth {
  version: string;
  doors: ReadonlyArray<{
    name: string;
    lock: 'LOCKED' | 'UNLOCKED' | null;
    relay: { level: 0 | 1; expected: 0 | 1 } | null;
    readers: boolean | null;
  }>;
  service: { reached: boolean } | null;
  broker: { reached: boolean } | null;
}

/** The links the daemon had reached before the switch: the new version must reach them too. */
export interface LinksBefore {
  service: boolean;
  broker: boolean;
}

/** Asks the running daemon (through its control socket); rejects when it does not answer. */
export type HealthProbe = () => Promise<DaemonHealth>;

/**
 * What keeps `health` from being healthy for `version` (docs/fleet.md, "Signed updates"): the version answering,
 * every door's relay driven at the level of its lock state (locked, unless an unlock was resumed), its readers
 * open, the service and the broker reached if they were before the switch. Empty: healthy.
 */
function healthProblems(health: DaemonHealth, version: string, before: LinksBefore): string[] {
  const problems: string[] = [];
  if (health.version !== version) problems.push(`version ${health.version} answers, not ${version}`);
  for (const door of health.doors) {
    if (door.relay === null || door.lock === null) problems.push(`${door.name}: not started`);
    else if (door.relay.level !== door.relay.expected) {
      problems.push(`${door.name}: its relay reads ${door.relay.level}, its ${door.lock} level is ${door.relay.expected}`);
    }
    if (door.readers === false) problems.push(`${door.name}: its reader is not open`);
  }
  if (before.service && !health.service?.reached) problems.push('the service not reached (it was before the update)');
  if (before.broker && !health.broker?.reached) problems.push('the broker not reached (it was before the update)');
  return problems;
}

export type HealthWait = { healthy: true; seconds: number } | { healthy: false; why: string };

/**
 * Asks the daemon every second until it is healthy for `version`, it ended for good, or `boundMs` passed; the
 * last problems seen say why it was not.
 */
export async function waitHealthy(
  deps: { probe: HealthProbe; service: ServiceControl; clock: Clock; sleep: (ms: number) => Promise<void> },
  version: string,
  before: LinksBefore,
  boundMs: number,
): Promise<HealthWait> {
  const started = deps.clock.monoNow();
  const deadline = started + boundMs;
  let last = 'the daemon did not answer';
  for (;;) {
    const gone = deps.service.gone();
    if (gone !== null) return { healthy: false, why: gone };
    try {
      const problems = healthProblems(await deps.probe(), version, before);
      if (problems.length === 0) return { healthy: true, seconds: Math.round((deps.clock.monoNow() - started) / 1000) };
      last = problems.join('; ');
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    const now = deps.clock.monoNow();
    if (now >= deadline) return { healthy: false, why: `not healthy within ${Math.round(boundMs / 1000)} s: ${last}` };
    await deps.sleep(Math.min(1000, deadline - now));
  }
}
