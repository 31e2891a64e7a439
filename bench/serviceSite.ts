/**
 * How a benchmark's reference service is laid out (`service-cluster`): one process on its SQLite file, as every
 * other benchmark runs it, or several processes on one PostgreSQL database behind HAProxy with the shipped
 * configuration (docs/reference-service.md, "A larger organization"). The benchmarks that run on either
 * (fleetBench.ts, directoryStorm.ts) take a layout, seed through prepareSite, start each process their own way
 * from its configuration file, and talk to the site's one URL (frontSite).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiKeys } from '../src/service/apiKeys.js';
import { openServiceSqlite } from '../src/service/database.js';
import { Directory } from '../src/service/directory.js';
import { migrateToPostgres } from '../src/service/sql/migrateToPostgres.js';
import { UserStore } from '../src/service/users.js';
import { createLogger } from '../src/util/logger.js';
import { startHaproxy } from './haproxy.js';
import { freePort } from './net.js';
import type { BenchPostgres } from './postgres.js';
import { seedService } from './serviceSeed.js';

/** One process on SQLite (every benchmark's default), or `processes` on one PostgreSQL database. */
export type SiteLayout = { engine: 'sqlite' } | { engine: 'postgres'; processes: number; postgres: BenchPostgres };

/** The layout in a row's words: "SQLite, 1 process", "PostgreSQL, 2 processes". */
export function layoutLabel(layout: SiteLayout): string {
  return layout.engine === 'sqlite' ? 'SQLite, 1 process' : `PostgreSQL, ${layout.processes} processes`;
}

/** A seeded site, not started: one configuration file per service process, the port each listens on. */
export interface PreparedSite {
  /** A DOOR key (the doors' key: PINs in clear) and an ADMIN key (the changes). */
  doorKey: string;
  adminKey: string;
  configs: string[];
  ports: number[];
  /** Drops the site's PostgreSQL database (its files under `dir` are the caller's). */
  drop(): Promise<void>;
}

let databases = 0;

/**
 * Seeds `users` Staff users (bench/serviceSeed.ts) into `dir`/svc/service.db with their directory built, as a
 * service that has served them before; on PostgreSQL, copies that file into a new database of the cluster by
 * `door-agent service migrate`'s own copy (multi-row INSERTs through pg, checked against the source). Writes each
 * process's configuration: `extraYaml` (the mqtt section, say) is appended to every one.
 */
export async function prepareSite(dir: string, layout: SiteLayout, users: number, extraYaml = ''): Promise<PreparedSite> {
  const dataDir = join(dir, 'svc');
  mkdirSync(dataDir, { recursive: true });
  const doorKey = seedService(dataDir, users);
  const db = openServiceSqlite(join(dataDir, 'service.db'));
  await new Directory(db, new UserStore(db)).refresh(Date.now());
  const adminKey = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  await db.close();
  const processes = layout.engine === 'sqlite' ? 1 : layout.processes;
  const ports: number[] = [];
  for (let i = 0; i < processes; i++) ports.push(await freePort());
  if (layout.engine === 'sqlite') {
    const config = join(dir, 'service.yaml');
    writeFileSync(config, `server: { listen: 127.0.0.1:${ports[0]}, dataDir: ${dataDir} }\n${extraYaml}`);
    return { doorKey, adminKey, configs: [config], ports, drop: async () => undefined };
  }
  const name = `bench_${process.pid}_${++databases}`;
  const url = await layout.postgres.createDatabase(name);
  const database = { url, passwordFile: layout.postgres.passwordFile };
  const copied = Date.now();
  await migrateToPostgres(join(dataDir, 'service.db'), database, process.env, createLogger({ level: 'warn', agentId: 'bench' }));
  process.stdout.write(`  ${users.toLocaleString('en-US')} users copied into PostgreSQL in ${((Date.now() - copied) / 1000).toFixed(1)} s\n`);
  const configs = ports.map((port, i) => {
    // Each process's dataDir is its own (the history mark); the database is the one they share.
    const own = join(dir, `svc-${i + 1}`);
    mkdirSync(own, { recursive: true });
    const config = join(dir, `service-${i + 1}.yaml`);
    writeFileSync(
      config,
      `server: { listen: 127.0.0.1:${port}, dataDir: ${own}, database: { url: "${url}", passwordFile: ${database.passwordFile} } }\n${extraYaml}`,
    );
    return config;
  });
  return { doorKey, adminKey, configs, ports, drop: () => layout.postgres.dropDatabase(name) };
}

/** The one address of a started site: the process's own, or HAProxy's in front of several. */
export interface SiteFront {
  url: string;
  port: number;
  /** The balancer's process, when there is one. */
  balancerPid: number | null;
  /** The balancer's account of the requests it passed on (bench/haproxy.ts), when there is one. */
  balancerSummary(): string | null;
  stop(): Promise<void>;
}

/** Once every process of `site` listens: its front (HAProxy round robin, with the shipped config, for several). */
export async function frontSite(dir: string, site: PreparedSite): Promise<SiteFront> {
  if (site.ports.length === 1) {
    const port = site.ports[0]!;
    return { url: `http://127.0.0.1:${port}`, port, balancerPid: null, balancerSummary: () => null, stop: async () => undefined };
  }
  const port = await freePort();
  const balancer = await startHaproxy(dir, port, site.ports);
  return { url: `http://127.0.0.1:${port}`, port, balancerPid: balancer.pid, balancerSummary: () => balancer.summary(), stop: () => balancer.stop() };
}
