/**
 * A PostgreSQL cluster of the benchmark's own (`service-cluster`): initdb into a directory under bench/.work, a
 * free loopback port, scram password authentication for its superuser. Unlike the tests' cluster
 * (test/support/postgres.ts: fsync off), it keeps PostgreSQL's durable defaults (fsync, synchronous_commit), as a
 * site's database server runs, so a change's commit costs here what it costs there. Stopped and removed by close().
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './net.js';
import { sleep } from './wait.js';

const USER = 'door';
const PASSWORD = 'bench-password-not-secret';

export interface BenchPostgres {
  /** A file holding the password (mode 0600), for server.database.passwordFile. */
  passwordFile: string;
  /** A new empty database owned by the benchmark's user: its URL, postgres://door@127.0.0.1:PORT/NAME. */
  createDatabase(name: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** CPU time (user + system, ms) of the server and every backend, those ended included, so far. */
  cpuMs(): number;
  close(): Promise<void>;
}

/** Debian's PostgreSQL binaries, newest version first. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) throw new Error('service-cluster benchmark: PostgreSQL is not installed (scripts/ensure-deps.sh installs it as root)');
  return join(root, newest, 'bin');
}

/** PostgreSQL refuses to run as root: as root, the cluster belongs to Debian's `postgres` user. */
function clusterOwner(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** /proc/PID/stat's fields after the command name: [state, ppid, ...]; null when the process is gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** CPU time (ms) of a process (user + system), with its ended and reaped children's when `children`. */
export function processCpuMs(pid: number, children = false): number {
  const f = statFields(pid);
  if (f === null) return 0;
  // utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the name.
  const ticks = Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0);
  return (ticks * 1000) / CLOCK_TICKS;
}

export async function startBenchPostgres(workDir: string): Promise<BenchPostgres> {
  const bin = postgresBin();
  const owner = clusterOwner();
  const dir = join(workDir, 'postgres');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'sockets'), { recursive: true });
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (owner) for (const path of [dir, join(dir, 'sockets'), pwfile]) chownSync(path, owner.uid, owner.gid);
  const asOwner = owner ?? {};
  const data = join(dir, 'data');
  const init = spawnSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', USER, `--pwfile=${pwfile}`, '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C.UTF-8'],
    { encoding: 'utf8', ...asOwner },
  );
  if (init.status !== 0) throw new Error(`service-cluster benchmark: initdb failed: ${init.stderr || init.error}`);
  const port = await freePort();
  let log = '';
  const server: ChildProcess = spawn(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', join(dir, 'sockets'), '-h', '127.0.0.1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...asOwner,
  });
  server.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  server.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const connect = async (database: string) => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };
  const started = Date.now();
  for (;;) {
    if (server.exitCode !== null) throw new Error(`service-cluster benchmark: PostgreSQL exited at start: ${log}`);
    try {
      await (await connect('postgres')).end();
      break;
    } catch (err) {
      if (Date.now() - started > 30_000)
        throw new Error(`service-cluster benchmark: PostgreSQL not accepting connections within 30 s: ${(err as Error).message} ${log}`);
      await sleep(100);
    }
  }
  const admin = async (sql: string) => {
    const client = await connect('postgres');
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  const postmaster = server.pid!;
  return {
    passwordFile,
    async createDatabase(name) {
      await admin(`CREATE DATABASE ${pg.escapeIdentifier(name)} OWNER ${pg.escapeIdentifier(USER)}`);
      return `postgres://${USER}@127.0.0.1:${port}/${name}`;
    },
    dropDatabase: (name) => admin(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
    cpuMs() {
      // The postmaster with the backends that ended (reaped: their time is in its cutime), and those running now.
      let total = processCpuMs(postmaster, true);
      for (const entry of readdirSync('/proc')) {
        const pid = Number(entry);
        if (!Number.isInteger(pid) || pid === postmaster) continue;
        if (statFields(pid)?.[1] === String(postmaster)) total += processCpuMs(pid);
      }
      return total;
    },
    async close() {
      if (server.exitCode === null) {
        const ended = new Promise((r) => server.once('exit', r));
        server.kill('SIGINT'); // fast shutdown
        await ended;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
