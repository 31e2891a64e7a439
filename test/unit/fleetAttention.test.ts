import { describe, expect, it } from 'vitest';
import type { FleetReport } from '../../src/api/fleet.js';
import { attentionOf, durationText, pendingChangesOf } from '../../src/service/console/fleetAttention.js';
import type { ActiveRollout, AgentView } from '../../src/service/console/fleetOverview.js';
import type { StoredTask, TaskState } from '../../src/service/fleet/firmware.js';
import type { AgentState } from '../../src/service/fleet/rollouts.js';

// What the Agents page says of an agent (docs/console/README.md, "Agents"): each reason it needs attention, and each
// change waiting for it, from the view the page is made of. The page itself: test/e2e/consoleFleet.test.ts.

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);

/** An adopted agent, online, that runs the current version 3 and has nothing under way. */
function adopted(): AgentView {
  return {
    rowId: 'agent-lobby',
    name: 'lobby',
    agentId: 'lobby',
    enrolment: {
      id: '00000000-0000-4000-8000-000000000001',
      state: 'adopted',
      facts: null,
      enrolledAt: NOW - 86_400_000,
      decidedAt: null,
      decidedBy: null,
      reason: null,
    },
    live: { id: 'lobby', online: true, health: null },
    report: { report: { version: '0.1.0', config: { applied: 3, refused: null, how: 'live' } }, at: NOW - 60_000 },
    config: { current: 3, currentAt: NOW - 3_600_000, pollSeconds: 60 },
    rollout: null,
    tasks: [],
  };
}

const withReport = (view: AgentView, report: Partial<FleetReport>): AgentView => ({
  ...view,
  report: { report: { ...view.report!.report, ...report }, at: view.report!.at },
});

let taskIds = 0;
const task = (state: TaskState): StoredTask => ({
  taskId: ++taskIds,
  agentId: 'lobby',
  readers: ['Front door entry'],
  file: { fileId: 1, name: 'reader-2.1.bin', sha256: '0'.repeat(64), size: 1000 },
  state,
  detail: '',
  createdAt: NOW,
  createdBy: 'console: ada',
  updatedAt: NOW,
});

function inRollout(view: AgentView, state: AgentState): AgentView {
  const agent = { agentId: 'lobby', stage: 'canary' as const, state, detail: '', updatedAt: NOW };
  const rollout: ActiveRollout = {
    rolloutId: 7,
    version: '0.2.0',
    canary: 'lobby',
    sharePercent: 50,
    healthBoundSeconds: 120,
    stage: 'canary',
    createdAt: NOW,
    createdBy: 'console: ada',
    stoppedReason: null,
    agents: [agent],
  };
  return { ...view, rollout: { rollout, agent } };
}

describe('why an agent needs attention', () => {
  it('an adopted agent, online, on its current configuration, with nothing failed: none', () => {
    expect(attentionOf(adopted(), NOW)).toEqual([]);
    expect(pendingChangesOf(adopted())).toEqual([]);
  });

  it('a board waiting for an operator: waiting for adoption; a refused one: none, it is decided', () => {
    const view = adopted();
    expect(attentionOf({ ...view, enrolment: { ...view.enrolment!, state: 'pending' } }, NOW)).toEqual(['waiting for adoption']);
    expect(attentionOf({ ...view, enrolment: { ...view.enrolment!, state: 'refused' }, live: { id: 'lobby', online: false, health: null } }, NOW)).toEqual([]);
  });

  it('offline by its retained status; one heard of nothing yet is not', () => {
    expect(attentionOf({ ...adopted(), live: { id: 'lobby', online: false, health: null } }, NOW)).toEqual(['offline']);
    expect(attentionOf({ ...adopted(), live: { id: 'lobby', online: null, health: null } }, NOW)).toEqual([]);
    expect(attentionOf({ ...adopted(), live: null }, NOW)).toEqual([]);
  });

  it('a configuration refused, newer than the one it runs; an older refusal is history', () => {
    const refused = (version: number) => withReport(adopted(), { config: { applied: 3, refused: { version, problems: ['x'] }, how: 'live' } });
    expect(attentionOf({ ...refused(4), config: { ...adopted().config, current: 4 } }, NOW)).toEqual(['refused configuration v4']);
    expect(attentionOf(refused(2), NOW)).toEqual([]);
    // A refused version is not waiting to be applied.
    expect(pendingChangesOf({ ...refused(4), config: { ...adopted().config, current: 4 } })).toEqual([]);
  });

  it('a newer configuration: pending at once, late after 3 poll intervals of the version it runs', () => {
    const stored = (agoSeconds: number, pollSeconds = 60): AgentView => ({
      ...adopted(),
      config: { current: 4, currentAt: NOW - agoSeconds * 1000, pollSeconds },
    });
    expect(pendingChangesOf(stored(10))).toEqual(['configuration v4 to apply']);
    expect(attentionOf(stored(180), NOW)).toEqual([]);
    expect(attentionOf(stored(181), NOW)).toEqual(['configuration v4 not applied after 3 min']);
    expect(attentionOf(stored(31, 10), NOW)).toEqual(['configuration v4 not applied after 31 s']);
    // An agent that never applied one waits for its first.
    const none = withReport(stored(600), { config: { applied: null, refused: null, how: null } });
    expect(attentionOf(none, NOW)).toEqual(['configuration v4 not applied after 10 min']);
  });

  it('its last update rolled back or failed, with the rollout; one healthy or under way is not', () => {
    const update = (state: NonNullable<FleetReport['update']>['state']) => withReport(adopted(), { update: { rollout_id: 7, state, detail: 'health check' } });
    expect(attentionOf(update('rolled_back'), NOW)).toEqual(['update rolled back (rollout 7)']);
    expect(attentionOf(update('failed'), NOW)).toEqual(['update failed (rollout 7)']);
    for (const fine of ['healthy', 'downloading', 'installing'] as const) expect(attentionOf(update(fine), NOW)).toEqual([]);
  });

  it('its last reader firmware task that ended failed; a later one done clears it', () => {
    const failed = task('failed');
    expect(attentionOf({ ...adopted(), tasks: [task('running'), failed] }, NOW)).toEqual([`reader firmware failed (task ${failed.taskId})`]);
    expect(attentionOf({ ...adopted(), tasks: [task('done'), task('failed')] }, NOW)).toEqual([]);
  });

  it('every reason at once, in the order the page lists them', () => {
    const failed = task('failed');
    const view: AgentView = {
      ...withReport(adopted(), {
        config: { applied: 2, refused: { version: 3, problems: [] }, how: 'live' },
        update: { rollout_id: 7, state: 'failed', detail: '' },
      }),
      live: { id: 'lobby', online: false, health: null },
      config: { current: 4, currentAt: NOW - 7_200_000, pollSeconds: 60 },
      tasks: [failed],
    };
    expect(attentionOf(view, NOW)).toEqual([
      'offline',
      'refused configuration v3',
      'configuration v4 not applied after 2 h',
      'update failed (rollout 7)',
      `reader firmware failed (task ${failed.taskId})`,
    ]);
  });
});

describe('the changes waiting for an agent', () => {
  it('an update: waiting for its stage, offered, downloading, installing; none once it ended', () => {
    expect(pendingChangesOf(inRollout(adopted(), 'waiting'))).toEqual(['update 0.2.0: waiting for its stage (canary)']);
    for (const state of ['offered', 'downloading', 'installing'] as const)
      expect(pendingChangesOf(inRollout(adopted(), state))).toEqual([`update 0.2.0 ${state}`]);
    for (const state of ['healthy', 'rolled_back', 'refused', 'failed'] as const) expect(pendingChangesOf(inRollout(adopted(), state))).toEqual([]);
  });

  it('reader firmware tasks waiting and running, counted; ended ones are not', () => {
    const tasks = [task('waiting'), task('waiting'), task('running'), task('done'), task('failed')];
    expect(pendingChangesOf({ ...adopted(), tasks })).toEqual(['reader firmware: 2 tasks waiting', 'reader firmware: 1 task running']);
  });

  it('a newer configuration, an update and tasks together', () => {
    const view = { ...inRollout(adopted(), 'offered'), config: { current: 4, currentAt: NOW, pollSeconds: 60 }, tasks: [task('waiting')] };
    expect(pendingChangesOf(view)).toEqual(['configuration v4 to apply', 'update 0.2.0 offered', 'reader firmware: 1 task waiting']);
  });
});

describe('a duration as the console says it', () => {
  it('seconds below 2 min, minutes below 2 h, then hours', () => {
    expect([45, 119, 120, 7199, 7200, 90_000].map(durationText)).toEqual(['45 s', '119 s', '2 min', '120 min', '2 h', '25 h']);
  });
});
