import { parse as parseYaml } from 'yaml';
import { boardFactsSchema, fleetReportSchema, type BoardFacts, type FleetReport } from '../../api/fleet.js';
import { AgentConfigs } from '../fleet/agentConfigs.js';
import { FleetAgents, storedJson, type FleetAgentRow } from '../fleet/fleetAgents.js';
import { Firmware, type StoredTask } from '../fleet/firmware.js';
import { Rollouts, type Rollout, type RolloutAgent } from '../fleet/rollouts.js';
import type { SqlDb } from '../sql/sqlDb.js';
import type { AgentLive, SiteFeed } from './siteFeed.js';

/*
 * The fleet as the console's Agents page shows it (docs/console/README.md, "Agents"): one view per agent the
 * service knows, enrolled (pending, adopted, refused) or only heard over MQTT, with what the service holds of it:
 * its enrolment, its live availability and health, its last report, its configuration versions, its place in the
 * rollout under way, its reader firmware tasks. Read from the fleet's own stores; nothing here changes them.
 */

/** An agent's poll interval when its configuration does not say (the agent's fleet.pollSeconds default). */
const DEFAULT_POLL_SECONDS = 60;

/** The rollout under way, with where each of its agents stands. */
export type ActiveRollout = Rollout & { agents: RolloutAgent[] };

export interface AgentView {
  /** The row's id on the page: `agent-<agent id>` (the live stream's too), `enrolment-<uuid>` before an id is given. */
  rowId: string;
  /** Its agent id, else the host name it reported (pending, refused). */
  name: string;
  agentId: string | null;
  enrolment: {
    id: string;
    state: FleetAgentRow['state'];
    facts: BoardFacts | null;
    /** ms */
    enrolledAt: number;
    decidedAt: number | null;
    decidedBy: string | null;
    reason: string | null;
  } | null;
  live: AgentLive | null;
  /** Its last report (its parts merged), and when (ms). */
  report: { report: FleetReport; at: number } | null;
  /** Its configuration at the service: the newest version and when it was stored (ms), and its poll interval. */
  config: { current: number | null; currentAt: number | null; pollSeconds: number };
  /** Its place in the rollout under way; null when none is under way or it is not part of it. */
  rollout: { rollout: ActiveRollout; agent: RolloutAgent } | null;
  /** Its reader firmware tasks, the newest first. */
  tasks: StoredTask[];
}

/** The poll interval a configuration document sets (fleet.pollSeconds), else the agent's default. */
function pollSecondsOf(document: string | undefined): number {
  if (document === undefined) return DEFAULT_POLL_SECONDS;
  try {
    const value = (parseYaml(document) as { fleet?: { pollSeconds?: unknown } } | null)?.fleet?.pollSeconds;
    return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 3600 ? value : DEFAULT_POLL_SECONDS;
  } catch {
    return DEFAULT_POLL_SECONDS;
  }
}

export class FleetOverview {
  private readonly agents: FleetAgents;
  private readonly configs: AgentConfigs;
  private readonly rollouts: Rollouts;
  private readonly firmware: Firmware;

  constructor(
    db: SqlDb,
    private readonly feed: SiteFeed | null,
  ) {
    this.agents = new FleetAgents(db);
    this.configs = new AgentConfigs(db);
    this.rollouts = new Rollouts(db);
    this.firmware = new Firmware(db);
  }

  /** The rollout under way (canary, share or all), if any. */
  async activeRollout(): Promise<ActiveRollout | null> {
    const active = (await this.rollouts.list()).find((r) => r.stage === 'canary' || r.stage === 'share' || r.stage === 'all');
    return active ? ((await this.rollouts.get(active.rolloutId)) ?? null) : null;
  }

  /** Every agent: the enrolled ones (adopted by id, then pending and refused, newest first), then those only heard over MQTT. */
  async all(): Promise<AgentView[]> {
    const [rows, rollout] = await Promise.all([this.agents.list(), this.activeRollout()]);
    const views = await Promise.all(rows.map((row) => this.viewOf(row, rollout)));
    const enrolled = new Set(views.flatMap((v) => (v.agentId === null ? [] : [v.agentId])));
    const heard = (this.feed?.agentList() ?? []).filter((a) => !enrolled.has(a.id)).map((live) => this.heardOnly(live));
    const adopted = views.filter((v) => v.agentId !== null).sort((a, b) => a.name.localeCompare(b.name));
    return [...views.filter((v) => v.enrolment?.state === 'pending'), ...adopted, ...heard, ...views.filter((v) => v.enrolment?.state === 'refused')];
  }

  /** One agent by its agent id: adopted, else heard over MQTT; null when the service knows neither. */
  async one(agentId: string): Promise<AgentView | null> {
    const row = (await this.agents.list()).find((r) => r.agent_id === agentId);
    if (row) return this.viewOf(row, await this.activeRollout());
    const live = this.feed?.agentList().find((a) => a.id === agentId);
    return live ? this.heardOnly(live) : null;
  }

  private heardOnly(live: AgentLive): AgentView {
    return {
      rowId: `agent-${live.id}`,
      name: live.id,
      agentId: live.id,
      enrolment: null,
      live,
      report: null,
      config: { current: null, currentAt: null, pollSeconds: DEFAULT_POLL_SECONDS },
      rollout: null,
      tasks: [],
    };
  }

  private async viewOf(row: FleetAgentRow, rollout: ActiveRollout | null): Promise<AgentView> {
    const facts = storedJson(boardFactsSchema, row.facts);
    const report = storedJson(fleetReportSchema, row.report);
    const agentId = row.state === 'adopted' ? row.agent_id : null;
    const view: AgentView = {
      rowId: agentId === null ? `enrolment-${row.enrolment_id}` : `agent-${agentId}`,
      name: agentId ?? facts?.hostname ?? row.enrolment_id,
      agentId,
      enrolment: {
        id: row.enrolment_id,
        state: row.state,
        facts,
        enrolledAt: Number(row.enrolled_at),
        decidedAt: row.decided_at === null ? null : Number(row.decided_at),
        decidedBy: row.decided_by,
        reason: row.reason,
      },
      live: null,
      report: report && row.reported_at !== null ? { report, at: Number(row.reported_at) } : null,
      config: { current: null, currentAt: null, pollSeconds: DEFAULT_POLL_SECONDS },
      rollout: null,
      tasks: [],
    };
    if (agentId === null) return view;
    view.live = this.feed?.agentList().find((a) => a.id === agentId) ?? null;
    const applied = view.report?.report.config?.applied ?? null;
    const [current, running, tasks] = await Promise.all([
      this.configs.current(agentId),
      applied === null ? undefined : this.configs.get(agentId, applied),
      this.firmware.tasksOf(agentId),
    ]);
    view.config = { current: current?.version ?? null, currentAt: current?.createdAt ?? null, pollSeconds: pollSecondsOf(running?.document) };
    view.tasks = tasks;
    const mine = rollout?.agents.find((a) => a.agentId === agentId);
    if (rollout && mine) view.rollout = { rollout, agent: mine };
    return view;
  }
}
