/**
 * Fleet benchmark (issue 11: a change at the service reaches every door in seconds; issue 28: a thousand doors and
 * their cold start): the reference service (bench/fleetService.ts, counting the requests it receives), a
 * mosquitto, and the agents' sync loops (bench/fleetAgents.ts: the daemon's SyncComponent, each with its own cache
 * and MQTT client), several per process. All started at once is the cold start (a power cut, a first deploy):
 * timed until every agent holds the directory, its failed syncs counted apart from those the service shed with
 * Retry-After. Then suspensions through the HTTP API, one at a time; each timed from the call until the first and
 * until the last agent holds it, beside the push's own delay (the call to the revision message at a plain
 * subscriber), and the requests the service received for it counted.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectAsync, type MqttClient } from 'mqtt';
import type { FleetAgentCommand, FleetAgentMessage } from './fleetAgents.js';
import { Children } from './fleetChildren.js';
import type { FleetServiceMessage } from './fleetService.js';
import { startBroker } from './mqttBench.js';
import { freePort } from './net.js';
import { processCpuMs } from './postgres.js';
import { infoRow, type BenchRow } from './report.js';
import { frontSite, layoutLabel, prepareSite, type PreparedSite, type SiteFront, type SiteLayout } from './serviceSite.js';
import { p50p99 } from './valueFile.js';
import { sleep, waitFor } from './wait.js';

/** One run's size: `fleet` is 100 doors on 10,000 users; `fleet-1000` is 1,000 doors (see benchmarkFleet1000). */
interface FleetScale {
  bench: string;
  users: number;
  agents: number;
  processes: number;
  changes: number;
  /** The agents start first, then sync (fleetAgents.ts, `held`): the cold start is timed from their 'go'. */
  held: boolean;
  /** The syncs of a process's agents on its thread, not a worker each (fleetAgents.ts, `shared`). */
  shared: boolean;
  /**
   * Changes made and reported apart before the timed ones: each agent's first delta after its cold start prepares
   * the delta's statements on its connection and runs code its process has not run yet.
   */
  warmupChanges: number;
}
const PREFIX = 'bench';
const CHANGE_TIMEOUT_MS = 30_000;
/** The daemon's default service.startDelaySeconds: the first syncs of a cold start spread over it. */
const START_DELAY_MS = 5_000;
// The cold start (every agent started at once, until all hold the directory) is measured against 2 minutes; past
// this the run gives up.
const FIRST_SYNC_TIMEOUT_MS = 600_000;
// After the last agent holds a change: time for any request it still causes to reach the service's count.
const SETTLE_MS = 300;
const wallNow = () => performance.timeOrigin + performance.now();

/** Requests that are not the agents': the changes' own calls, and the balancer's health checks (service-cluster). */
const NOT_THE_AGENTS = new Set(['PUT /togglesuspension', 'GET /healthz', 'HEAD /healthz']);

/** What the service processes counted so far, added up over them. */
interface SiteCount {
  agentRequests: number;
  revision: number;
  cpuMs: number;
  directoryAnswerMs: { p50: number; p99: number; count: number };
}

/**
 * The service processes of a site (bench/fleetService.ts, one per configuration file), each counting the
 * requests it receives; ask() adds up their counts of the agents' requests (all but the changes' own calls) and
 * their CPU time, and pools their GET /directory times. The revision is the first process's (on PostgreSQL every
 * process reads it from the database).
 */
function countingSite(
  children: Children,
  configs: readonly string[],
): {
  ready: () => boolean;
  ask: () => Promise<SiteCount>;
} {
  const services = configs.map((config, i) => {
    const child = children.spawn(configs.length === 1 ? 'the service' : `service process ${i + 1}`, 'fleetService.js', [config]);
    const state = { ready: false, waiting: [] as Array<(m: FleetServiceMessage & { type: 'count' }) => void> };
    child.on('message', (m: FleetServiceMessage) => {
      if (m.type === 'ready') state.ready = true;
      else state.waiting.shift()?.(m);
    });
    return { child, state };
  });
  const askOne = async ({ child, state }: (typeof services)[number]) => {
    let count: (FleetServiceMessage & { type: 'count' }) | null = null;
    state.waiting.push((m) => (count = m));
    child.send({ type: 'count' });
    await waitFor(
      'fleet',
      children.alive(() => count !== null),
      10_000,
      "the service's request count",
    );
    return count!;
  };
  const ask = async (): Promise<SiteCount> => {
    const counts = await Promise.all(services.map(askOne));
    const answers = counts.flatMap((c) => c.directoryAnswerMs).sort((a, b) => a - b);
    const at = (q: number) => answers[Math.min(answers.length - 1, Math.floor(q * answers.length))] ?? 0;
    return {
      agentRequests: counts.reduce(
        (sum, { requests }) => sum + Object.entries(requests).reduce((n, [path, c]) => (NOT_THE_AGENTS.has(path) ? n : n + c), 0),
        0,
      ),
      revision: counts[0]!.revision,
      cpuMs: counts.reduce((sum, c) => sum + c.cpuMs, 0),
      directoryAnswerMs: { p50: at(0.5), p99: at(0.99), count: answers.length },
    };
  };
  return { ready: () => services.every((s) => s.state.ready), ask };
}

/** The agents, `processes` processes of them: what each holds, every sync they report, their logs (warnings). */
class Fleet {
  readonly held: number[];
  private readonly processes: Array<{ send(command: FleetAgentCommand): unknown }> = [];
  readonly synced: Array<{ agent: number; revision: number; at: number }> = [];
  private readonly logs: string[] = [];
  private ready = 0;
  /** Per agent process, the askers of its CPU time waiting for its answer. */
  private readonly cpuAnswers: Array<Array<(cpuMs: number) => void>> = [];

  constructor(
    children: Children,
    dir: string,
    private readonly scale: FleetScale,
    args: { serviceUrl: string; apiKeyFile: string; mqttUrl: string },
  ) {
    this.held = new Array<number>(scale.agents).fill(-1);
    const perProcess = scale.agents / scale.processes;
    for (let p = 0; p < scale.processes; p++) {
      // Logs to a file: the failed syncs are counted, not printed.
      this.logs.push(join(dir, `agents-${p}.log`));
      const log = openSync(this.logs[p]!, 'a');
      const agents = children.spawn(
        `agent process ${p}`,
        'fleetAgents.js',
        [
          String(p * perProcess),
          String(perProcess),
          join(dir, 'agents'),
          args.serviceUrl,
          args.apiKeyFile,
          args.mqttUrl,
          PREFIX,
          scale.held ? 'held' : 'start',
          scale.shared ? 'shared' : 'threads',
        ],
        log,
      );
      this.processes.push(agents);
      this.cpuAnswers.push([]);
      closeSync(log);
      agents.on('message', (m: FleetAgentMessage) => {
        if (m.type === 'ready') this.ready++;
        else if (m.type === 'cpu') this.cpuAnswers[p]!.shift()?.(m.cpuMs);
        else if (m.revision !== null) {
          this.synced.push({ agent: m.agent, revision: m.revision, at: m.at });
          this.held[m.agent] = Math.max(this.held[m.agent]!, m.revision);
        }
      });
    }
  }

  /** Held agents: each asks for its first sync within `spreadMs` from now. */
  go(spreadMs: number): void {
    for (const agents of this.processes) agents.send({ type: 'go', spreadMs });
  }

  /** The CPU time all agent processes have used so far (each answers over IPC, in order). */
  async cpuMs(): Promise<number> {
    const answers = this.processes.map(
      (agents, p) =>
        new Promise<number>((resolve) => {
          this.cpuAnswers[p]!.push(resolve);
          agents.send({ type: 'cpu' });
        }),
    );
    return (await Promise.all(answers)).reduce((sum, ms) => sum + ms, 0);
  }

  allStarted(): boolean {
    return this.ready === this.scale.processes;
  }

  allHold(revision: number): boolean {
    return this.held.every((r) => r >= revision);
  }

  /**
   * The failed syncs in the logs (the scheduler's warnings: each is retried), and the last one's reason. A sync the
   * service shed (503 with Retry-After: it said when to come back) is counted apart: load shedding, not an outage.
   */
  failedSyncs(): { count: number; shed: number; last: string | null; reasons: string } {
    const failures = this.logs.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line.includes('"msg":"sync failed'))
        .map((line) => JSON.parse(line) as { err?: { message?: string }; retryAfterMs?: number }),
    );
    const outages = failures.filter((f) => f.retryAfterMs === undefined);
    const last = outages.at(-1);
    // The reasons, most frequent first, with the service's address and byte counts taken out so that alike ones group.
    const byReason = new Map<string, number>();
    for (const f of outages) {
      const reason = (f.err?.message ?? '?').replace(/https?:\/\/[^\s:]+:\d+/g, 'SERVICE').replace(/\d+/g, 'N');
      byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
    }
    const reasons = [...byReason]
      .sort((a, b) => b[1] - a[1])
      .map(([reason, n]) => `${n}x ${reason}`)
      .slice(0, 3)
      .join('; ');
    return {
      count: outages.length,
      shed: failures.length - outages.length,
      last: last === undefined ? null : (last.err?.message ?? JSON.stringify(last)),
      reasons,
    };
  }
}

/** A plain subscriber to the directory revision: when each message arrives, the push's own delay. */
async function revisionSubscriber(mqttUrl: string): Promise<{ client: MqttClient; pushed: Array<{ revision: number; at: number }> }> {
  const client = await connectAsync(mqttUrl, { protocolVersion: 5 });
  (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true); // as the agents' clients
  const pushed: Array<{ revision: number; at: number }> = [];
  client.on('message', (_t, payload) => pushed.push({ revision: (JSON.parse(payload.toString()) as { revision: number }).revision, at: wallNow() }));
  await client.subscribeAsync(`${PREFIX}/directory/revision`, { qos: 1 });
  return { client, pushed };
}

/** One change's figures, each time in ms from the start of the HTTP call. */
interface ChangeSample {
  allMs: number;
  firstMs: number;
  pushMs: number;
  requests: number;
  /** The service's CPU time for the change (the call, the push, every door's request). */
  serviceCpuMs: number;
  /** The agent processes' CPU time for the change (the revision message, the sync, the cache write), all agents. */
  agentsCpuMs: number;
  /** PostgreSQL's CPU time for the change (server and backends), on a site of several processes; else 0. */
  databaseCpuMs: number;
  /** HAProxy's CPU time for the change, on a site of several processes; else 0. */
  balancerCpuMs: number;
}

async function runFleet(workDir: string, scale: FleetScale, layout: SiteLayout = { engine: 'sqlite' }): Promise<BenchRow[]> {
  const { users: USERS, agents: AGENTS, processes: PROCESSES, changes: CHANGES } = scale;
  const dir = join(workDir, layout.engine === 'sqlite' ? scale.bench : `${scale.bench}-${layout.engine}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const children = new Children();
  let broker: Awaited<ReturnType<typeof startBroker>> | null = null;
  let subscriber: MqttClient | null = null;
  let site: PreparedSite | null = null;
  let front: SiteFront | null = null;
  try {
    const mqttPort = await freePort();
    broker = await startBroker(dir, mqttPort);
    const mqttUrl = `mqtt://127.0.0.1:${mqttPort}`;
    site = await prepareSite(dir, layout, USERS, `mqtt: { url: "${mqttUrl}", topicPrefix: ${PREFIX} }\n`);
    const apiKeyFile = join(dir, 'api-key');
    writeFileSync(apiKeyFile, `${site.doorKey}\n`);
    const service = countingSite(children, site.configs);
    await waitFor('fleet', children.alive(service.ready), 60_000, 'the service listening');
    front = await frontSite(dir, site);
    const push = await revisionSubscriber(mqttUrl);
    subscriber = push.client;

    let fleetStarted = performance.now();
    const fleet = new Fleet(children, dir, scale, { serviceUrl: front.url, apiKeyFile, mqttUrl });
    await waitFor(
      'fleet',
      children.alive(() => fleet.allStarted()),
      // A thousand worker threads, caches and MQTT clients on two cores: minutes.
      60_000 + AGENTS * 500,
      `the ${PROCESSES} agent processes starting`,
    );
    if (scale.held) {
      fleetStarted = performance.now();
      fleet.go(START_DELAY_MS);
    }
    await waitFor(
      'fleet',
      children.alive(() => fleet.allHold(0)),
      FIRST_SYNC_TIMEOUT_MS,
      `a first sync by each of the ${AGENTS} agents`,
    );
    const afterColdStart = await service.ask();
    let current = afterColdStart.revision;
    await waitFor(
      'fleet',
      children.alive(() => fleet.allHold(current)),
      CHANGE_TIMEOUT_MS,
      `revision ${current} at every agent`,
    );
    const { count: failedFirst, shed: shedFirst, reasons } = fleet.failedSyncs();
    if (failedFirst > 0) process.stdout.write(`${scale.bench}: failed syncs during the cold start: ${reasons}\n`);
    const firstSyncs = { seconds: (performance.now() - fleetStarted) / 1000, failed: failedFirst, shed: shedFirst, answers: afterColdStart.directoryAnswerMs };
    // The cold start wrote a thousand caches: their pages go to the one disk of this machine for some seconds after
    // (a site's doors each write their own card). The changes are timed once the disk has them all.
    spawnSync('sync');
    await sleep(SETTLE_MS);
    let before = await service.ask();
    let agentsCpuBefore = await fleet.cpuMs();
    const databaseCpu = () => (layout.engine === 'postgres' ? layout.postgres.cpuMs() : 0);
    let databaseCpuBefore = databaseCpu();
    const balancerPid = front.balancerPid;
    const balancerCpu = () => (balancerPid === null ? 0 : processCpuMs(balancerPid));
    let balancerCpuBefore = balancerCpu();

    const samples: ChangeSample[] = [];
    const warmups: ChangeSample[] = [];
    for (let i = -scale.warmupChanges; i < CHANGES; i++) {
      const emailId = 100 + scale.warmupChanges + i;
      const sinceSync = fleet.synced.length;
      const sincePush = push.pushed.length;
      const started = wallNow();
      const answer = await fetch(`${front.url}/togglesuspension`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${site.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email_id: emailId }),
      });
      if (!answer.ok) throw new Error(`fleet benchmark: PUT /togglesuspension answered ${answer.status}: ${await answer.text()}`);
      // The change's revision: the first one an agent reports beyond what all of them held.
      const changed = () => fleet.synced.slice(sinceSync).find((s) => s.revision > current)?.revision;
      while (changed() === undefined || !fleet.allHold(changed()!)) {
        children.check();
        if (wallNow() - started > CHANGE_TIMEOUT_MS) {
          const missing = fleet.held.filter((r) => r < (changed() ?? current + 1)).length;
          const { last } = fleet.failedSyncs();
          throw new Error(
            `fleet benchmark: change ${i} (email_id ${emailId}) not held by ${missing} of ${AGENTS} agents within ${CHANGE_TIMEOUT_MS / 1000} s${last ? ` (last failed sync: ${last})` : ''}`,
          );
        }
        await sleep(5);
      }
      current = changed()!;
      const reached = new Map<number, number>();
      for (const s of fleet.synced.slice(sinceSync)) if (s.revision >= current && !reached.has(s.agent)) reached.set(s.agent, s.at - started);
      const message = push.pushed.slice(sincePush).find((m) => m.revision >= current);
      if (!message) throw new Error(`fleet benchmark: revision ${current} held by the agents but never seen by the plain subscriber`);
      await sleep(SETTLE_MS);
      const after = await service.ask();
      const agentsCpuAfter = await fleet.cpuMs();
      const databaseCpuAfter = databaseCpu();
      const balancerCpuAfter = balancerCpu();
      (i < 0 ? warmups : samples).push({
        allMs: Math.max(...reached.values()),
        firstMs: Math.min(...reached.values()),
        pushMs: message.at - started,
        requests: after.agentRequests - before.agentRequests,
        serviceCpuMs: after.cpuMs - before.cpuMs,
        agentsCpuMs: agentsCpuAfter - agentsCpuBefore,
        databaseCpuMs: databaseCpuAfter - databaseCpuBefore,
        balancerCpuMs: balancerCpuAfter - balancerCpuBefore,
      });
      before = after;
      agentsCpuBefore = agentsCpuAfter;
      databaseCpuBefore = databaseCpuAfter;
      balancerCpuBefore = balancerCpuAfter;
    }
    const afterChanges = fleet.failedSyncs();
    // The reasons list every failure so far: the cold start's come first.
    if (afterChanges.count > firstSyncs.failed) process.stdout.write(`${scale.bench}: failed syncs (cold start and changes): ${afterChanges.reasons}\n`);
    const balancer = front.balancerSummary();
    if (balancer !== null) process.stdout.write(`${scale.bench}: HAProxy passed on ${balancer}\n`);
    if (afterChanges.count > 0) {
      // The evidence, kept past the run: the agents' logs (each failure with its time) and the balancer's.
      const kept = `${dir}-logs`;
      rmSync(kept, { recursive: true, force: true });
      mkdirSync(kept);
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.log'))) copyFileSync(join(dir, file), join(kept, file));
      process.stdout.write(`${scale.bench}: the logs of the failed syncs are kept in ${kept}\n`);
    }
    return rows(scale, samples, warmups, firstSyncs, afterChanges.count - firstSyncs.failed, layout.engine === 'postgres');
  } finally {
    await subscriber?.endAsync(true);
    await front?.stop();
    await children.endAll();
    broker?.kill('SIGTERM');
    await site?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function rows(
  scale: FleetScale,
  samples: ChangeSample[],
  warmups: ChangeSample[],
  firstSyncs: { seconds: number; failed: number; shed: number; answers: { p50: number; p99: number; count: number } },
  failedDuringChanges: number,
  onPostgres: boolean,
): BenchRow[] {
  const { users: USERS, agents: AGENTS, changes: CHANGES, bench: b } = scale;
  const all = p50p99(samples.map((s) => s.allMs));
  const first = p50p99(samples.map((s) => s.firstMs));
  const push = p50p99(samples.map((s) => s.pushMs));
  const meanRequests = samples.reduce((n, s) => n + s.requests, 0) / samples.length;
  const maxRequests = Math.max(...samples.map((s) => s.requests));
  const serviceCpu = p50p99(samples.map((s) => s.serviceCpuMs));
  const agentsCpu = p50p99(samples.map((s) => s.agentsCpuMs));
  const databaseCpu = p50p99(samples.map((s) => s.databaseCpuMs));
  const balancerCpu = p50p99(samples.map((s) => s.balancerCpuMs));
  const pushLabel = (p: string) => `call to revision message at a plain subscriber, ${p}`;
  return [
    {
      bench: b,
      metric: `requests at the service per change (mean of ${CHANGES}, ${AGENTS} agents)`,
      value: meanRequests,
      unit: '',
      floor: null,
      floorLabel: '',
      ratio: null,
      target: `<= ${AGENTS} (one per door)`,
      met: meanRequests <= AGENTS,
    },
    {
      bench: b,
      metric: 'requests at the service, most for one change',
      value: maxRequests,
      unit: '',
      floor: null,
      floorLabel: '',
      ratio: null,
      target: `<= ${AGENTS}`,
      met: maxRequests <= AGENTS,
    },
    {
      bench: b,
      metric: `change held by all ${AGENTS} agents p50`,
      value: all.p50,
      unit: 'ms',
      floor: push.p50,
      floorLabel: pushLabel('p50'),
      ratio: all.p50 / push.p50,
      target: '',
      met: null,
    },
    {
      bench: b,
      metric: `change held by all ${AGENTS} agents p99`,
      value: all.p99,
      unit: 'ms',
      floor: push.p99,
      floorLabel: pushLabel('p99'),
      ratio: all.p99 / push.p99,
      target: '< 3000',
      met: all.p99 < 3000,
    },
    ...warmups.map((w, i) =>
      infoRow(b, `warm-up change ${i + 1} (untimed; the agents' first delta after their cold start): held by all ${AGENTS}`, w.allMs, 'ms'),
    ),
    // Where the agents share this machine's cores, this is what transfers to a service machine of its own.
    infoRow(b, `the service's CPU time per change (the call, the push, ${AGENTS} doors' requests) p50`, serviceCpu.p50, 'ms'),
    ...(onPostgres
      ? [
          infoRow(b, `PostgreSQL's CPU time per change (server and backends, the same) p50`, databaseCpu.p50, 'ms'),
          infoRow(b, `HAProxy's CPU time per change (the same requests, passed on) p50`, balancerCpu.p50, 'ms'),
        ]
      : []),
    // The doors' side of a change, all of them on this machine's cores: on a site each door spends its share on
    // its own board, in parallel.
    infoRow(b, `the agents' CPU time per change (${AGENTS} agents: the revision message, the sync, the cache write) p50`, agentsCpu.p50, 'ms'),
    {
      bench: b,
      metric: 'change held by the first agent p50',
      value: first.p50,
      unit: 'ms',
      floor: push.p50,
      floorLabel: pushLabel('p50'),
      ratio: first.p50 / push.p50,
      target: '',
      met: null,
    },
    {
      bench: b,
      metric: `failed syncs during the ${CHANGES} changes`,
      value: failedDuringChanges,
      unit: '',
      floor: null,
      floorLabel: '',
      ratio: null,
      target: '0',
      met: failedDuringChanges === 0,
    },
    {
      bench: b,
      metric: `cold start: ${AGENTS} agents started at once until all hold ${USERS.toLocaleString('en-US')} users`,
      value: firstSyncs.seconds,
      unit: 's',
      floor: null,
      floorLabel: '',
      ratio: null,
      target: '< 120',
      met: firstSyncs.seconds < 120,
    },
    {
      bench: b,
      metric: 'cold start: failed syncs meanwhile (timed out, refused: an outage; each retried)',
      value: firstSyncs.failed,
      unit: '',
      floor: null,
      floorLabel: '',
      ratio: null,
      target: '0',
      met: firstSyncs.failed === 0,
    },
    {
      bench: b,
      metric: `cold start: the service's answer to GET /directory, arrival to last byte sent, p99 (of ${firstSyncs.answers.count})`,
      value: firstSyncs.answers.p99,
      unit: 'ms',
      floor: null,
      floorLabel: '',
      ratio: null,
      target: "< 10000 (the doors' timeoutSeconds)",
      met: firstSyncs.answers.p99 < 10_000,
    },
    infoRow(b, 'cold start: syncs the service shed meanwhile (503 + Retry-After, each retried then)', firstSyncs.shed, ''),
  ];
}

/** 100 doors on 10,000 users, in 4 processes (issue 11's fleet). */
export function benchmarkFleet(workDir: string): Promise<BenchRow[]> {
  return runFleet(workDir, { bench: 'fleet', users: 10_000, agents: 100, processes: 4, changes: 20, held: false, shared: false, warmupChanges: 0 });
}

/**
 * 1,000 doors in 4 processes of 250. Every agent's own work (parsing and writing its cache) shares this machine's
 * cores, where each door has a computer of its own: the directory is 1,000 users, so that 1,000 full syncs are the
 * service's load more than the bench machine's; and 4 processes, not more, because processes taking turns on two
 * cores cost more CPU than the doors' work (20 of 50 spent twice as much: bench/HISTORY.md). What the service
 * carries at 10,000 and 250,000 users is `directory-storm`.
 */
export function benchmarkFleet1000(workDir: string): Promise<BenchRow[]> {
  return runFleet(workDir, FLEET_1000);
}

const FLEET_1000: FleetScale = { bench: 'fleet-1000', users: 1_000, agents: 1_000, processes: 4, changes: 10, held: true, shared: true, warmupChanges: 1 };

/** fleet-1000 against a site of `layout` (bench/serviceCluster.ts): its rows under `bench`, each figure named with the layout. */
export async function fleet1000On(workDir: string, bench: string, layout: SiteLayout): Promise<BenchRow[]> {
  const rows = await runFleet(workDir, Object.assign({}, FLEET_1000, { bench }), layout);
  return rows.map((r) => Object.assign(r, { metric: `${layoutLabel(layout)}, fleet-1000: ${r.metric}` }));
}
