import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './net.js';
import { sleep } from './wait.js';

const INSTALL = 'PostgreSQL is not installed: run scripts/ensure-deps.sh as root (apt-get install postgresql)';

/** Debian's PostgreSQL binaries (/usr/lib/postgresql/<version>/bin), newest version first. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions[0] === undefined) throw new Error(INSTALL);
  return join(root, versions[0], 'bin');
}

/** PostgreSQL refuses to run as root: as root, the cluster belongs to Debian's `postgres` user. */
function clusterOwner(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || uid <= 0) throw new Error(`no postgres user to run PostgreSQL as: ${INSTALL}`);
  return { uid, gid };
}

export const PG_USER = 'door';
export const PG_PASSWORD = 'test-password-not-secret';

export interface PostgresCluster {
  port: number;
  dir: string;
  /** A file holding the password of PG_USER (mode 0600), for server.database.passwordFile. */
  passwordFile: string;
  /** postgres://door@127.0.0.1:PORT/<database> (no password). */
  url(database: string): string;
  /** A new empty database owned by PG_USER; its URL. */
  createDatabase(name: string): Promise<string>;
  /** A client as PG_USER (superuser) to `database`; the caller ends it. */
  client(database?: string): Promise<pg.Client>;
  /** Stops the server (fast shutdown: connections are cut) and waits for it to end. */
  stop(): Promise<void>;
  /** Starts the server again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its files. */
  close(): Promise<void>;
}

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A PostgreSQL cluster of the test's own: initdb into a temporary directory, on a free loopback port, password
 * (scram) authentication over TCP for the superuser PG_USER, fsync off (a test's data need not survive a power
 * cut). Stopped and removed by close().
 */
export async function startPostgres(): Promise<PostgresCluster> {
  const bin = postgresBin();
  const owner = clusterOwner();
  const dir = mkdtempSync(join(tmpdir(), 'door-pg-'));
  const data = join(dir, 'data');
  const sockets = join(dir, 'sockets');
  mkdirSync(sockets);
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${PG_PASSWORD}\n`, { mode: 0o600 });
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, `${PG_PASSWORD}\n`, { mode: 0o600 });
  if (owner) for (const path of [dir, sockets, pwfile]) chownSync(path, owner.uid, owner.gid);
  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};
  const init = spawnSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', PG_USER, `--pwfile=${pwfile}`, '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--locale=C.UTF-8'],
    { encoding: 'utf8', ...asOwner },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.error}`);
  const port = await freePort();
  let child: ChildProcess | null = null;
  let log = '';

  const start = async () => {
    log = '';
    const server = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', sockets, '-h', '127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'max_connections=200'],
      { stdio: ['ignore', 'pipe', 'pipe'], ...asOwner },
    );
    server.stdout?.on('data', (d: Buffer) => (log += d.toString()));
    server.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    child = server;
    const started = Date.now();
    while (!(await listening(port))) {
      if (server.exitCode !== null) throw new Error(`PostgreSQL exited at start: ${log}`);
      if (Date.now() - started > 30_000) throw new Error(`PostgreSQL did not listen on 127.0.0.1:${port} within 30 s: ${log}`);
      await sleep(50);
    }
    // Listening is not yet accepting: wait until a connection is let in.
    for (;;) {
      const probe = new pg.Client({ host: '127.0.0.1', port, user: PG_USER, password: PG_PASSWORD, database: 'postgres' });
      try {
        await probe.connect();
        await probe.end();
        return;
      } catch (err) {
        await probe.end().catch(() => undefined);
        if (Date.now() - started > 30_000) throw new Error(`PostgreSQL did not accept connections within 30 s: ${(err as Error).message} ${log}`);
        await sleep(100);
      }
    }
  };

  const stop = async () => {
    const server = child;
    if (server === null || server.exitCode !== null) return;
    const ended = new Promise<void>((resolve) => server.once('exit', () => resolve()));
    server.kill('SIGINT'); // fast shutdown
    await ended;
    child = null;
  };

  const client = async (database = 'postgres') => {
    const c = new pg.Client({ host: '127.0.0.1', port, user: PG_USER, password: PG_PASSWORD, database });
    await c.connect();
    return c;
  };

  await start();
  return {
    port,
    dir,
    passwordFile,
    url: (database) => `postgres://${PG_USER}@127.0.0.1:${port}/${database}`,
    async createDatabase(name) {
      const c = await client();
      try {
        await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} OWNER ${pg.escapeIdentifier(PG_USER)}`);
      } finally {
        await c.end();
      }
      return `postgres://${PG_USER}@127.0.0.1:${port}/${name}`;
    },
    client,
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
