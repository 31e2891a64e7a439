import type { Logger } from 'pino';
import type { FleetReport } from '../api/fleet.js';
import type { FleetClient } from './fleetClient.js';

/** A part of the agent's report: its configuration, an update's state, its tasks (api/fleet.ts fleetReportSchema). */
export type ReportPart = Omit<FleetReport, 'version'>;

/**
 * What the agent has to tell the service (POST /fleet/self/report, docs/fleet.md): each part set here is sent with
 * the next report, and kept until a report carrying it went through (a link that is down loses nothing, the
 * newest state of each part is sent once it is back).
 */
export class FleetReporter {
  private pending: ReportPart = {};

  constructor(
    private readonly deps: {
      client: FleetClient;
      /** The program's version, in every report. */
      version: string;
      logger: Logger;
    },
  ) {}

  /** The part's newest state, to send with the next report. */
  set(part: ReportPart): void {
    Object.assign(this.pending, part);
  }

  /** Sends what is pending (nothing when nothing is); rejects when the service could not take it (it stays pending). */
  async flush(): Promise<void> {
    const parts = this.pending;
    if (Object.keys(parts).length === 0) return;
    this.pending = {};
    try {
      await this.deps.client.report(Object.assign({ version: this.deps.version }, parts));
    } catch (err) {
      // A part set meanwhile is newer than the one that failed to go.
      this.pending = Object.assign(parts, this.pending);
      throw err;
    }
    this.deps.logger.debug({ parts: Object.keys(parts) }, 'fleet: report sent');
  }
}
