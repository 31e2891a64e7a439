import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { stopChild } from './process.js';
import { sleep } from './wait.js';
import { haproxyBinary } from '../../bench/haproxy.js';

// The shipped configuration's path, the binary and the templating for loopback are the benchmark's too
// (service-cluster): they live in bench/haproxy.ts (tests may import bench/, bench never imports test/).
export { SHIPPED_HAPROXY_CONFIG, haproxyBinary, writeTemplatedConfig } from '../../bench/haproxy.js';

/** `haproxy -c` on a file: null when HAProxy finds it valid, else what it printed. */
export function haproxyCheck(file: string): string | null {
  const result = spawnSync(haproxyBinary(), ['-c', '-f', file], { encoding: 'utf8' });
  if (result.error) throw result.error;
  return result.status === 0 ? null : `${result.stdout}${result.stderr}`;
}

/** One server's state as HAProxy's `show stat` gives it. */
export interface ServerState {
  /** UP, DOWN, or a transition (`UP 1/2`: one failed check of the two that take it out). */
  status: string;
  /** The last health check's result: L7OK (200), L7STS (another status), L4CON (connection refused), ... */
  check: string;
}

/** HAProxy started on a configuration file, in the foreground; its log (stderr) kept for failure messages. */
export class Haproxy {
  private output = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly statsSocket: string,
  ) {
    child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  /** Starts `haproxy -db -f file` (in `dir`), its stats socket at `statsSocket`; resolves once the socket answers. */
  static async start(file: string, dir: string, statsSocket: string): Promise<Haproxy> {
    const child = spawn(haproxyBinary(), ['-db', '-f', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const proxy = new Haproxy(child, statsSocket);
    const started = Date.now();
    for (;;) {
      if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}) at start:\n${proxy.log()}`);
      try {
        await proxy.servers();
        return proxy;
      } catch (err) {
        if (Date.now() - started > 20_000) {
          await stopChild(child);
          throw new Error(`haproxy's stats socket did not answer within 20 s (${(err as Error).message}):\n${proxy.log()}`);
        }
        await sleep(50);
      }
    }
  }

  log(): string {
    return this.output;
  }

  /** Each server of every backend, by name: `show stat` on the stats socket. */
  async servers(): Promise<Map<string, ServerState>> {
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(this.statsSocket);
      let out = '';
      socket.on('data', (d: Buffer) => (out += d.toString()));
      socket.once('end', () => resolve(out));
      socket.once('error', reject);
      socket.write('show stat\n');
    });
    const [header, ...rows] = text.trim().split('\n');
    if (!header?.startsWith('# ')) throw new Error(`not the answer of show stat: ${text}`);
    const columns = header.slice(2).split(',');
    const col = (name: string) => columns.indexOf(name);
    const states = new Map<string, ServerState>();
    for (const row of rows) {
      const cells = row.split(',');
      const name = cells[col('svname')]!;
      if (name === 'FRONTEND' || name === 'BACKEND') continue;
      states.set(name, { status: cells[col('status')]!, check: cells[col('check_status')]! });
    }
    return states;
  }

  /** Waits until `done` holds of the servers' states; fails with them and the log after `timeoutMs`. */
  async until(what: string, done: (servers: Map<string, ServerState>) => boolean, timeoutMs = 30_000): Promise<Map<string, ServerState>> {
    const started = Date.now();
    for (;;) {
      const servers = await this.servers();
      if (done(servers)) return servers;
      if (Date.now() - started > timeoutMs) {
        throw new Error(`${what}: not within ${timeoutMs} ms; servers ${JSON.stringify([...servers])}; haproxy's log:\n${this.log()}`);
      }
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    await stopChild(this.child);
  }
}
