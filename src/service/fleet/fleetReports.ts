import { fleetReportSchema, type FleetReport } from '../../api/fleet.js';
import { withProps } from '../../core/objects.js';
import type { SqlDb } from '../sql/sqlDb.js';

/*
 * Which agents are adopted, and what each last reported (fleet_agents.report, reported_at; docs/fleet.md): a report carries the
 * parts that changed, so each part sent replaces the one stored and the others are kept.
 */

export interface StoredReport {
  report: FleetReport;
  /** ms */
  at: number;
}

export class FleetReports {
  constructor(private readonly db: SqlDb) {}

  /** Whether an agent of that id was enrolled and adopted. */
  async isAdopted(agentId: string): Promise<boolean> {
    return (await this.db.value<string>("SELECT enrolment_id FROM fleet_agents WHERE agent_id = ? AND state = 'adopted'", [agentId])) !== undefined;
  }

  /** The agent's last report, its parts merged; undefined before its first (or when what is stored no longer reads). */
  async last(agentId: string): Promise<StoredReport | undefined> {
    const row = await this.db.get<{ report: string | null; reported_at: number | string | null }>(
      "SELECT report, reported_at FROM fleet_agents WHERE agent_id = ? AND state = 'adopted'",
      [agentId],
    );
    if (!row?.report || row.reported_at === null) return undefined;
    const parsed = fleetReportSchema.safeParse(JSON.parse(row.report));
    return parsed.success ? { report: parsed.data, at: Number(row.reported_at) } : undefined;
  }

  /** Stores the parts of `report` over the ones stored (in one transaction: two reports at once keep both parts). */
  store(agentId: string, report: FleetReport, now: number): Promise<void> {
    return this.db.transaction(async () => {
      const before = await this.last(agentId);
      const merged = before ? withProps(before.report, report) : report;
      await this.db.run('UPDATE fleet_agents SET report = ?, reported_at = ? WHERE agent_id = ?', [JSON.stringify(merged), now, agentId]);
    });
  }
}
