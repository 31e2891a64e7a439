import type { FleetStart } from '../config/fleetVersions.js';
import type { AgentOptions } from '../config/options.js';

/** What `door-agent status` shows of the fleet (docs/fleet.md): the configuration version merged, or that it waits for one. */
export interface FleetStatus {
  /** The configuration version from the service merged under the board file; null: the board file alone. */
  configVersion: number | null;
  /** No doors yet: the agent waits for its configuration from the service. */
  waiting: boolean;
  /** Versions kept but passed over (they fail their check), each with its first problem. */
  passedOver: Array<{ file: string; version: number | null; problem: string }>;
}

/** Null without a fleet section. */
export function fleetStatus(config: AgentOptions, fleet: FleetStart | null): FleetStatus | null {
  if (!config.fleet || fleet === null) return null;
  return {
    configVersion: fleet.version,
    waiting: config.doors.length === 0,
    passedOver: fleet.passedOver.map((p) => ({ file: p.file, version: p.version, problem: p.problems[0] ?? '' })),
  };
}

export function fleetStatusLines(status: FleetStatus | null): string[] {
  if (status === null) return [];
  const version =
    status.configVersion === null
      ? status.waiting
        ? 'fleet: waiting for its configuration from the service'
        : 'fleet: no configuration version from the service yet (the board file alone)'
      : `fleet: configuration version ${status.configVersion} from the service`;
  return [
    version,
    ...status.passedOver.map((p) => `  WARNING: ${p.version === null ? p.file : `configuration version ${p.version}`} fails its check: ${p.problem}`),
  ];
}
