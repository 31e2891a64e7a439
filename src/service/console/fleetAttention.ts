import type { AgentView } from './fleetOverview.js';

/*
 * What the Agents page says of an agent beyond its state (docs/console/README.md, "Agents"): why it needs attention
 * (the page's "Needs attention" filter) and the changes waiting for it. Pure: the view and the time in, words out.
 */

/** A duration as the console says it: "45 s", "12 min", "3 h". */
export function durationText(seconds: number): string {
  return seconds < 120 ? `${seconds} s` : seconds < 7200 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`;
}

/** How many poll intervals a newer configuration may wait before the agent needs attention. */
const POLLS_BEFORE_LATE = 3;

/** The configuration version the agent runs (0: none yet), and the one it last refused when that is newer. */
function configState(view: AgentView): { applied: number; refused: { version: number; problems: string[] } | null } {
  const config = view.report?.report.config;
  const applied = config?.applied ?? 0;
  const refused = config?.refused && config.refused.version > applied ? config.refused : null;
  return { applied, refused };
}

/** A newer configuration at the service than the one the agent runs, that it has not refused. */
function waitingVersion(view: AgentView): number | null {
  const { applied, refused } = configState(view);
  const current = view.config.current;
  return current !== null && current > applied && refused?.version !== current ? current : null;
}

/** Refused configuration version that is newer than the one the agent runs, if any. */
export function refusedConfig(view: AgentView): { version: number; problems: string[] } | null {
  return configState(view).refused;
}

/**
 * Why the agent needs attention (none: it does not): waiting for adoption, offline, a configuration refused, a
 * newer configuration not applied after 3 poll intervals, its last update rolled back or failed, its last reader
 * firmware task failed. A refused enrolment needs none: it is decided.
 */
export function attentionOf(view: AgentView, now: number): string[] {
  if (view.enrolment?.state === 'refused') return [];
  if (view.enrolment?.state === 'pending') return ['waiting for adoption'];
  const reasons: string[] = [];
  if (view.live?.online === false) reasons.push('offline');
  const refused = refusedConfig(view);
  if (refused) reasons.push(`refused configuration v${refused.version}`);
  const waiting = waitingVersion(view);
  if (waiting !== null && view.config.currentAt !== null) {
    const late = Math.floor((now - view.config.currentAt) / 1000);
    if (late > POLLS_BEFORE_LATE * view.config.pollSeconds) reasons.push(`configuration v${waiting} not applied after ${durationText(late)}`);
  }
  const update = view.report?.report.update;
  if (update?.state === 'rolled_back' || update?.state === 'failed') {
    reasons.push(`update ${update.state === 'rolled_back' ? 'rolled back' : 'failed'} (rollout ${update.rollout_id})`);
  }
  const lastEnded = view.tasks.find((t) => t.state === 'done' || t.state === 'failed');
  if (lastEnded?.state === 'failed') reasons.push(`reader firmware failed (task ${lastEnded.taskId})`);
  return reasons;
}

/** The changes waiting for the agent: a newer configuration, an update offered or under way, firmware tasks. */
export function pendingChangesOf(view: AgentView): string[] {
  const changes: string[] = [];
  const waiting = waitingVersion(view);
  if (waiting !== null) changes.push(`configuration v${waiting} to apply`);
  if (view.rollout) {
    const { rollout, agent } = view.rollout;
    if (agent.state === 'waiting') changes.push(`update ${rollout.version}: waiting for its stage (${agent.stage})`);
    else if (agent.state === 'offered' || agent.state === 'downloading' || agent.state === 'installing')
      changes.push(`update ${rollout.version} ${agent.state}`);
  }
  for (const state of ['waiting', 'running'] as const) {
    const count = view.tasks.filter((t) => t.state === state).length;
    if (count > 0) changes.push(`reader firmware: ${count} task${count === 1 ? '' : 's'} ${state}`);
  }
  return changes;
}
