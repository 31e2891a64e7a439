import { parse as parseYaml } from 'yaml';
import type { FleetReport, UpdateOffer } from '../../api/fleet.js';
import { BadRequest } from '../badRequest.js';
import type { SqlDb } from '../sql/sqlDb.js';
import { Releases, bundlePath } from './releases.js';

/*
 * Rollouts of a release to the fleet (docs/fleet.md, "Signed updates"): one canary agent, then a share of the
 * others, then all; a stage is offered once every agent of the one before reported healthy, and the first agent
 * that rolled back, failed or refused stops the rollout. No timer moves a rollout: it moves in the transaction
 * that records an agent's report, so any service process may record it. Each such transaction first writes the
 * rollout's row, so that two reports at once run one after the other (SQLite: one writer; PostgreSQL: the second
 * waits for the row, then runs again on the first's result): a stage is never skipped nor entered twice.
 */

export type AgentStage = 'canary' | 'share' | 'all';
export type RolloutStage = AgentStage | 'done' | 'stopped';
export type AgentState = 'waiting' | 'offered' | 'downloading' | 'installing' | 'healthy' | 'rolled_back' | 'refused' | 'failed';

const STAGES: readonly AgentStage[] = ['canary', 'share', 'all'];
const ACTIVE = "('canary', 'share', 'all')";
/** Offered and not yet ended: the agent is offered the update again at each exchange until it reports how it ended. */
const UNDER_WAY = new Set<AgentState>(['offered', 'downloading', 'installing']);
const ENDED_BADLY = new Set<AgentState>(['rolled_back', 'refused', 'failed']);
/** What a health bound needs beyond an agent's start delay: its first sync (healthy needs the service reached again). */
const SYNC_MARGIN_SECONDS = 30;

/** What an operator asks for (POST /fleet/rollouts). */
export interface RolloutRequest {
  version: string;
  canary: string;
  sharePercent: number;
  healthBoundSeconds: number;
}

export interface RolloutAgent {
  agentId: string;
  stage: AgentStage;
  state: AgentState;
  detail: string;
  /** ms */
  updatedAt: number;
}

export interface Rollout extends RolloutRequest {
  rolloutId: number;
  stage: RolloutStage;
  /** ms */
  createdAt: number;
  createdBy: string;
  stoppedReason: string | null;
}

interface RolloutRow {
  rollout_id: number | string;
  version: string;
  stage: RolloutStage;
  canary: string;
  share_percent: number | string;
  health_bound_seconds: number | string;
  created_at: number | string;
  created_by: string;
  stopped_reason: string | null;
}

interface AgentRow {
  agent_id: string;
  stage: AgentStage;
  state: AgentState;
  detail: string;
  updated_at: number | string;
}

/** fleet_rollouts.allow_downgrade is left at 0: a rollout never takes a board back (routesRollouts.ts). */
const ROLLOUT_COLUMNS = 'rollout_id, version, stage, canary, share_percent, health_bound_seconds, created_at, created_by, stopped_reason';

const rolloutOf = (row: RolloutRow): Rollout => ({
  rolloutId: Number(row.rollout_id),
  version: row.version,
  stage: row.stage,
  canary: row.canary,
  sharePercent: Number(row.share_percent),
  healthBoundSeconds: Number(row.health_bound_seconds),
  createdAt: Number(row.created_at),
  createdBy: row.created_by,
  stoppedReason: row.stopped_reason,
});

/** `service.startDelaySeconds` as a configuration document sets it; null when it does not (or is not YAML). */
function startDelayOf(document: string): number | null {
  try {
    const delay = (parseYaml(document) as { service?: { startDelaySeconds?: unknown } } | null)?.service?.startDelaySeconds;
    return typeof delay === 'number' ? delay : null;
  } catch {
    return null;
  }
}

/** Agent ids in one order on both engines (code units, not a collation). */
const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What an adopted agent reported of its board: its architecture, and the version it runs (its last report's, else its enrolment's). */
function boardOf(facts: string, report: string | null): { arch: string; version: string } {
  const read = (text: string | null): Record<string, unknown> => {
    try {
      const value = text === null ? null : (JSON.parse(text) as unknown);
      return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  const f = read(facts);
  const r = read(report);
  const text = (v: unknown, fallback: string) => (typeof v === 'string' ? v : fallback);
  return { arch: text(f.arch, 'unknown'), version: text(r.version, text(f.version, '')) };
}

export class Rollouts {
  private readonly releases: Releases;

  constructor(private readonly db: SqlDb) {
    this.releases = new Releases(db);
  }

  /** The adopted agents with their board, in their stable order (by agent id). */
  private async adoptedAgents(): Promise<Array<{ agentId: string; arch: string; version: string }>> {
    const rows = await this.db.all<{ agent_id: string; facts: string; report: string | null }>(
      "SELECT agent_id, facts, report FROM fleet_agents WHERE state = 'adopted' AND agent_id IS NOT NULL",
    );
    return rows.map((r) => Object.assign({ agentId: r.agent_id }, boardOf(r.facts, r.report))).sort((a, b) => byId(a.agentId, b.agentId));
  }

  /** The adopted agent's architecture; undefined for an agent that is not adopted. */
  async archOf(agentId: string): Promise<string | undefined> {
    const row = await this.db.get<{ facts: string }>("SELECT facts FROM fleet_agents WHERE agent_id = ? AND state = 'adopted'", [agentId]);
    return row ? boardOf(row.facts, null).arch : undefined;
  }

  /**
   * A new rollout of `version` to every adopted agent: the canary, then the first ceil(share_percent %) of the
   * others by agent id, then the rest. An agent that already runs that version counts as healthy at once. 400 when
   * the canary is not adopted or an agent's architecture has no bundle of that version, 409 while another rollout is
   * under way.
   */
  create(request: RolloutRequest, by: string, now: number): Promise<Rollout & { agents: RolloutAgent[] }> {
    return this.db.transaction(async () => {
      const active = await this.db.get<RolloutRow>(`SELECT ${ROLLOUT_COLUMNS} FROM fleet_rollouts WHERE stage IN ${ACTIVE}`);
      if (active) {
        const id = Number(active.rollout_id);
        throw new BadRequest(
          `rollout ${id} (version ${active.version}) is at its ${active.stage} stage: one rollout at a time; stop it (POST /fleet/rollouts/${id}/stop) or let it end first`,
          409,
        );
      }
      const agents = await this.adoptedAgents();
      if (!agents.some((a) => a.agentId === request.canary)) {
        const names = agents.map((a) => a.agentId).join(', ');
        throw new BadRequest(`canary: ${request.canary} is not an adopted agent (adopted: ${names === '' ? 'none' : names})`);
      }
      const arches = new Set(await this.db.column<string>('SELECT arch FROM fleet_releases WHERE version = ?', [request.version]));
      if (arches.size === 0) {
        throw new BadRequest(
          `version: no bundle of version ${request.version} is stored: upload one for each architecture first (PUT /fleet/releases/${request.version}/<arch>)`,
        );
      }
      await this.checkHealthBound(
        request.healthBoundSeconds,
        agents.map((a) => a.agentId),
      );
      const lacking = agents.filter((a) => !arches.has(a.arch));
      if (lacking.length > 0) {
        const needed = [...new Set(lacking.map((a) => a.arch))].sort(byId);
        throw new BadRequest(
          `version: no bundle of version ${request.version} for the architecture of ${lacking.map((a) => `${a.agentId} (${a.arch})`).join(', ')}: ` +
            `upload ${needed.map((arch) => `${request.version}/${arch}`).join(', ')} first (stored: ${[...arches].sort(byId).join(', ')})`,
        );
      }
      const id = Number(
        await this.db.value<number | string>(
          'INSERT INTO fleet_rollouts (version, stage, canary, share_percent, health_bound_seconds, created_at, created_by) ' +
            "VALUES (?, 'canary', ?, ?, ?, ?, ?) RETURNING rollout_id",
          [request.version, request.canary, request.sharePercent, request.healthBoundSeconds, now, by],
        ),
      );
      const others = agents.filter((a) => a.agentId !== request.canary);
      const shareCount = Math.ceil((others.length * request.sharePercent) / 100);
      const canary = agents.find((a) => a.agentId === request.canary)!;
      const stageOf = (i: number): AgentStage => (i < shareCount ? 'share' : 'all');
      const staged = [{ agent: canary, stage: 'canary' as AgentStage }].concat(others.map((agent, i) => ({ agent, stage: stageOf(i) })));
      for (const { agent, stage } of staged) {
        const there = agent.version === request.version;
        await this.db.run('INSERT INTO fleet_rollout_agents (rollout_id, agent_id, stage, state, detail, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
          id,
          agent.agentId,
          stage,
          there ? 'healthy' : 'waiting',
          there ? `already runs ${request.version}` : '',
          now,
        ]);
      }
      await this.advance(id);
      return (await this.get(id))!;
    });
  }

  /**
   * 400 when the health bound is shorter than the longest `service.startDelaySeconds` of the agents' current
   * configurations (as the service holds them) plus a sync: an updated board counts as healthy only once it reached
   * the service again, so a good build would be rolled back. A board file's own delay is not known here.
   */
  private async checkHealthBound(boundSeconds: number, agentIds: string[]): Promise<void> {
    const rows = await this.db.all<{ agent_id: string; document: string }>(
      'SELECT c.agent_id, c.document FROM fleet_configs c WHERE c.version = (SELECT max(m.version) FROM fleet_configs m WHERE m.agent_id = c.agent_id)',
    );
    const inRollout = new Set(agentIds);
    let longest: { agentId: string; delay: number } | null = null;
    for (const row of rows) {
      if (!inRollout.has(row.agent_id)) continue;
      const delay = startDelayOf(row.document);
      if (delay !== null && (longest === null || delay > longest.delay)) longest = { agentId: row.agent_id, delay };
    }
    if (longest === null || boundSeconds >= longest.delay + SYNC_MARGIN_SECONDS) return;
    throw new BadRequest(
      `health_bound_seconds: ${boundSeconds} s is too short: ${longest.agentId}'s configuration sets service.startDelaySeconds to ${longest.delay} s, ` +
        `and an updated board is healthy only once it has synced with the service again; give at least ${longest.delay + SYNC_MARGIN_SECONDS} s ` +
        `(that delay + ${SYNC_MARGIN_SECONDS} s)`,
    );
  }

  /** Stops a rollout under way (an operator's reason); 404 unknown, 409 when it has ended already. */
  stop(rolloutId: number, reason: string): Promise<Rollout & { agents: RolloutAgent[] }> {
    return this.db.transaction(async () => {
      const changed = await this.db.run(`UPDATE fleet_rollouts SET stage = 'stopped', stopped_reason = ? WHERE rollout_id = ? AND stage IN ${ACTIVE}`, [
        reason,
        rolloutId,
      ]);
      const rollout = await this.get(rolloutId);
      if (!rollout) throw new BadRequest(`no rollout ${rolloutId}`, 404);
      if (changed.changes === 0) throw new BadRequest(`rollout ${rolloutId} is ${rollout.stage} already: nothing to stop`, 409);
      return rollout;
    });
  }

  /** Every rollout, the newest first. */
  async list(): Promise<Rollout[]> {
    return (await this.db.all<RolloutRow>(`SELECT ${ROLLOUT_COLUMNS} FROM fleet_rollouts ORDER BY rollout_id DESC`)).map(rolloutOf);
  }

  /** One rollout with where each of its agents stands (by stage, then agent id); undefined when there is none. */
  async get(rolloutId: number): Promise<(Rollout & { agents: RolloutAgent[] }) | undefined> {
    const row = await this.db.get<RolloutRow>(`SELECT ${ROLLOUT_COLUMNS} FROM fleet_rollouts WHERE rollout_id = ?`, [rolloutId]);
    if (!row) return undefined;
    const agents = (
      await this.db.all<AgentRow>('SELECT agent_id, stage, state, detail, updated_at FROM fleet_rollout_agents WHERE rollout_id = ?', [rolloutId])
    )
      .map((a) => ({ agentId: a.agent_id, stage: a.stage, state: a.state, detail: a.detail, updatedAt: Number(a.updated_at) }))
      .sort((a, b) => STAGES.indexOf(a.stage) - STAGES.indexOf(b.stage) || byId(a.agentId, b.agentId));
    return Object.assign(rolloutOf(row), { agents });
  }

  /**
   * The update offered to the agent now (GET /fleet/self), or null: offered while the rollout is under way, the
   * agent's stage has been reached and it has not reported how it ended. The first offer marks it 'offered'.
   */
  offerFor(agentId: string, now: number): Promise<UpdateOffer | null> {
    return this.db.transaction(async () => {
      const row = await this.db.get<RolloutRow & { agent_stage: AgentStage; agent_state: AgentState }>(
        `SELECT ${ROLLOUT_COLUMNS.split(', ')
          .map((c) => `r.${c}`)
          .join(', ')}, a.stage AS agent_stage, a.state AS agent_state FROM fleet_rollouts r JOIN fleet_rollout_agents a ON a.rollout_id = r.rollout_id ` +
          `WHERE a.agent_id = ? AND r.stage IN ('canary', 'share', 'all')`,
        [agentId],
      );
      if (!row) return null;
      const rollout = rolloutOf(row);
      if (STAGES.indexOf(row.agent_stage) > STAGES.indexOf(rollout.stage as AgentStage)) return null;
      if (row.agent_state !== 'waiting' && !UNDER_WAY.has(row.agent_state)) return null;
      const arch = await this.archOf(agentId);
      const release = arch === undefined ? undefined : await this.releases.get(rollout.version, arch);
      if (!release) return null;
      if (row.agent_state === 'waiting') {
        await this.db.run("UPDATE fleet_rollout_agents SET state = 'offered', updated_at = ? WHERE rollout_id = ? AND agent_id = ?", [
          now,
          rollout.rolloutId,
          agentId,
        ]);
      }
      return {
        rollout_id: rollout.rolloutId,
        manifest: release.manifest,
        signature: release.signature,
        bundle_path: bundlePath(release.manifest),
        // Kept in the offer for the agents that read it; never true (a rollout never takes a board back).
        allow_downgrade: false,
        health_bound_seconds: rollout.healthBoundSeconds,
      };
    });
  }

  /** Whether the agent is offered release `version` for `arch` now (it may then fetch the bundle with its own key). */
  async isOffered(agentId: string, version: string, arch: string): Promise<boolean> {
    const offer = await this.db.value<string>(
      `SELECT a.state FROM fleet_rollouts r JOIN fleet_rollout_agents a ON a.rollout_id = r.rollout_id WHERE a.agent_id = ? AND r.version = ? AND r.stage IN ${ACTIVE} ` +
        "AND a.state IN ('offered', 'downloading', 'installing')",
      [agentId, version],
    );
    return offer !== undefined && (await this.archOf(agentId)) === arch;
  }

  /**
   * Records the update part of an agent's report (POST /fleet/self/report) and moves its rollout: the first
   * rolled_back, refused or failed stops it; healthy may complete a stage and offer the next. Ignored (false) when
   * the rollout is unknown or never offered the agent an update.
   */
  recordUpdateReport(agentId: string, update: NonNullable<FleetReport['update']>, now: number): Promise<boolean> {
    return this.db.transaction(async () => {
      // The rollout's row written first: the reports of one rollout are recorded one at a time (see above).
      const stage = await this.db.value<RolloutStage>('UPDATE fleet_rollouts SET stage = stage WHERE rollout_id = ? RETURNING stage', [update.rollout_id]);
      if (stage === undefined) return false;
      const changed = await this.db.run(
        "UPDATE fleet_rollout_agents SET state = ?, detail = ?, updated_at = ? WHERE rollout_id = ? AND agent_id = ? AND state <> 'waiting'",
        [update.state, update.detail, now, update.rollout_id, agentId],
      );
      if (changed.changes === 0) return false;
      if (!STAGES.includes(stage as AgentStage)) return true;
      if (ENDED_BADLY.has(update.state)) {
        const detail = update.detail === '' ? '' : `: ${update.detail}`;
        await this.db.run("UPDATE fleet_rollouts SET stage = 'stopped', stopped_reason = ? WHERE rollout_id = ?", [
          `${agentId} reported ${update.state.replace('_', ' ')}${detail}`,
          update.rollout_id,
        ]);
      } else if (update.state === 'healthy') {
        await this.advance(update.rollout_id);
      }
      return true;
    });
  }

  /** Moves the rollout past every stage whose agents all reported healthy (an empty stage too), in the caller's transaction. */
  private async advance(rolloutId: number): Promise<void> {
    for (;;) {
      const stage = await this.db.value<RolloutStage>('SELECT stage FROM fleet_rollouts WHERE rollout_id = ?', [rolloutId]);
      const at = STAGES.indexOf(stage as AgentStage);
      if (at < 0) return;
      const states = await this.db.column<AgentState>('SELECT state FROM fleet_rollout_agents WHERE rollout_id = ? AND stage = ?', [rolloutId, stage!]);
      if (states.some((s) => s !== 'healthy')) return;
      await this.db.run('UPDATE fleet_rollouts SET stage = ? WHERE rollout_id = ? AND stage = ?', [STAGES[at + 1] ?? 'done', rolloutId, stage!]);
    }
  }
}
