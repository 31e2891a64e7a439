import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DOOR_UUID, runCli } from './cli.js';
import { Haproxy, haproxyBinary, writeTemplatedConfig } from './haproxy.js';
import { Mosquitto } from './mosquitto.js';
import { freePort } from './net.js';
import { startPostgres, type PostgresCluster } from './postgres.js';
import { startServiceProcess, type ServiceProcess } from './serviceProcess.js';
import { sleep } from './wait.js';

/** The topic prefix of the cluster's broker. */
export const PREFIX = 'door-agent';
/** The secret that signs the service's commands and retained messages (and the agents' checks of them). */
export const COMMAND_SECRET = 'a-cluster-command-secret-of-32-bytes-or-more';
/** Said in a process's log when it takes the publisher lock (src/service/sql/leadership.ts). */
export const NOW_PUBLISHES = 'this process now publishes to the broker';
const NO_LONGER_PUBLISHES = 'this process no longer publishes to the broker';

/** One `door-agent service` process of the cluster. */
export interface ClusterProcess {
  name: string;
  port: number;
  config: string;
  process: ServiceProcess;
  /** Processes started under this name before the current one (killed or stopped): their output, kept. */
  earlier: ServiceProcess[];
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/**
 * Several service processes started as an operator starts them (`door-agent service --config` from the built CLI),
 * all on one PostgreSQL database of a cluster of the test's own, behind Debian's HAProxy with the shipped
 * configuration (examples/haproxy/haproxy.cfg), all connected to one mosquitto. Keys are made with `door-agent
 * service key create`, as an operator makes them.
 */
export class ServiceCluster {
  private constructor(
    readonly dir: string,
    readonly pg: PostgresCluster,
    readonly databaseUrl: string,
    readonly broker: Mosquitto,
    readonly processes: ClusterProcess[],
    readonly proxy: Haproxy,
    readonly frontPort: number,
    readonly adminKey: string,
    readonly doorKey: string,
  ) {}

  /**
   * Starts it in `dir`: PostgreSQL and its database, the schema and two keys (ADMIN, DOOR) made by the CLI, then
   * `seed` (a client to the database: rows straight into its tables), then the processes together, then HAProxy;
   * resolves once HAProxy's health checks have taken every process in.
   */
  static async start(
    dir: string,
    options: { processes?: number; retryAfterSeconds?: number; seed?: (cluster: PostgresCluster, database: string) => Promise<void> } = {},
  ): Promise<ServiceCluster> {
    haproxyBinary(); // a missing haproxy fails here, naming the package
    const count = options.processes ?? 3;
    const pg = await startPostgres();
    const broker = new Mosquitto(join(dir, 'broker'));
    const started: ServiceProcess[] = [];
    let proxy: Haproxy | null = null;
    try {
      const databaseUrl = await pg.createDatabase('door');
      await broker.start();
      const secretFile = join(dir, 'command-secret');
      writeFileSync(secretFile, `${COMMAND_SECRET}\n`, { mode: 0o600 });
      const processes: ClusterProcess[] = [];
      for (let i = 0; i < count; i++) {
        const name = `service${i + 1}`;
        const home = join(dir, name);
        mkdirSync(join(home, 'data'), { recursive: true });
        const port = await freePort();
        const config = join(home, 'service.yaml');
        writeFileSync(
          config,
          `server:
  listen: 127.0.0.1:${port}
  dataDir: ${join(home, 'data')}
  retryAfterSeconds: ${options.retryAfterSeconds ?? 2}
  lockReplyTimeoutSeconds: 5
  database: { url: "${databaseUrl}", passwordFile: ${pg.passwordFile}, maxConnections: 10 }
  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
mqtt:
  url: "${broker.url}"
  topicPrefix: ${PREFIX}
  commandSecretFile: ${secretFile}
`,
        );
        processes.push({ name, port, config, process: undefined as unknown as ServiceProcess, earlier: [] });
      }
      // The schema is made by the first command that opens the database: the key, as an operator makes it.
      const key = (rank: string) => {
        const made = runCli(['service', 'key', 'create', '--rank', rank, '--config', processes[0]!.config]);
        if (made.status !== 0) throw new Error(`service key create --rank ${rank} failed (${made.status}): ${made.stderr}`);
        return made.stdout.trim();
      };
      const adminKey = key('ADMIN');
      const doorKey = key('DOOR');
      await options.seed?.(pg, 'door');
      // All at once, as a site's machines start; each one that started is known before a failure is thrown.
      const starts = await Promise.allSettled(
        processes.map(async (p) => {
          p.process = await startCluster(p.config);
          started.push(p.process);
        }),
      );
      for (const s of starts) if (s.status === 'rejected') throw s.reason;
      const frontPort = await freePort();
      const statsSocket = join(dir, 'haproxy.sock');
      const haproxyConfig = writeTemplatedConfig(dir, { frontPort, backends: processes, statsSocket });
      proxy = await Haproxy.start(haproxyConfig, dir, statsSocket);
      const cluster = new ServiceCluster(dir, pg, databaseUrl, broker, processes, proxy, frontPort, adminKey, doorKey);
      await cluster.allUp('every process checked and up at start');
      return cluster;
    } catch (err) {
      // What had started, stopped: a failed start leaves nothing running.
      await proxy?.stop();
      await Promise.all(started.map((p) => p.stop(5000)));
      await broker.stop();
      await pg.close();
      throw err;
    }
  }

  /** The balancer's address: what the doors and the operators name. */
  get url(): string {
    return `http://127.0.0.1:${this.frontPort}`;
  }

  /** Waits until HAProxy has every process UP after a passed health check. */
  async allUp(what: string, timeoutMs = 60_000): Promise<void> {
    await this.proxy.until(what, (s) => this.processes.every((p) => s.get(p.name)?.status === 'UP' && s.get(p.name)?.check === 'L7OK'), timeoutMs);
  }

  /**
   * A request with the ADMIN key (unless `key` says another, or null for none) through the balancer, or straight to
   * process `via` (its index); a JSON body when given. Never throws for a status; `timeoutMs` bounds the wait.
   */
  async call(method: string, path: string, body?: unknown, options: { via?: number; key?: string | null; timeoutMs?: number } = {}): Promise<Answer> {
    const base = options.via === undefined ? this.url : `http://127.0.0.1:${this.processes[options.via]!.port}`;
    const key = options.key === undefined ? this.adminKey : options.key;
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  /** The indexes of the running processes whose log says they publish to the broker now. */
  publishers(): number[] {
    return this.processes.flatMap((p, i) => {
      if (p.process.child.exitCode !== null || p.process.child.signalCode !== null) return [];
      const out = p.process.output();
      return out.lastIndexOf(NOW_PUBLISHES) > out.lastIndexOf(NO_LONGER_PUBLISHES) ? [i] : [];
    });
  }

  /** The one process that publishes; fails when there is none or more than one after `timeoutMs`. */
  async publisher(timeoutMs = 15_000): Promise<number> {
    const started = Date.now();
    for (;;) {
      const found = this.publishers();
      if (found.length === 1) return found[0]!;
      if (Date.now() - started > timeoutMs) throw new Error(`publishing processes: ${JSON.stringify(found)}, not exactly one within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** kill -9 of process `i`; resolves once it is gone. */
  async kill(i: number): Promise<void> {
    const { child } = this.processes[i]!.process;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** Starts process `i` again on its configuration (after a kill), as an operator's supervisor would. */
  async restart(i: number): Promise<void> {
    const p = this.processes[i]!;
    p.earlier.push(p.process);
    p.process = await startCluster(p.config);
  }

  /** Everything each process printed, for a failure's message. */
  logs(): string {
    return this.processes.map((p) => `--- ${p.name} ---\n${[...p.earlier, p.process].map((s) => s.output()).join('\n--- (restarted) ---\n')}`).join('\n');
  }

  async stop(): Promise<void> {
    await this.proxy.stop();
    await Promise.all(this.processes.map((p) => p.process?.stop(5000)));
    await this.broker.stop();
    await this.pg.close();
  }
}

/** One process on its configuration, its log captured; ready once it listens and has connected to the broker. */
function startCluster(config: string): Promise<ServiceProcess> {
  return startServiceProcess(config, { captureStderr: true, timeoutMs: 50_000 });
}
