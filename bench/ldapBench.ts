/**
 * `ldap` (issue 56): the LDAP sync (docs/identity-sources.md, "LDAP and Active Directory") of 10,000 people in 20
 * groups from a real slapd (bench/slapd.ts: ldaps with its CA pinned) into an empty SQLite service database, the
 * service in this process (buildService, its own LdapSync) and each sync asked as an operator asks it
 * (POST /identity-sources/ldap/sync, in-process). The first sync (10,000 users made, 10,000 memberships), a sync
 * where nothing changed, and a sync after one person's name changed: each its wall time and this process's CPU
 * (process.cpuUsage around it: the service's work; slapd's is its own process's), the first its peak RSS
 * (sampled). Floor: LdapClientReader.read() alone on the same server, what reading the directory costs without
 * the sync's work.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { syncRunSchema, type SyncRunAnswer } from '../src/api/identity.js';
import { identityServerSchema } from '../src/config/identitySchema.js';
import { ApiKeys } from '../src/service/apiKeys.js';
import { openServiceSqlite } from '../src/service/database.js';
import { LdapClientReader } from '../src/service/identity/ldap/ldapReader.js';
import type { LdapSourceOptions } from '../src/service/options.js';
import { buildService } from '../src/service/server.js';
import { systemClock } from '../src/util/clock.js';
import { type BenchRow, infoRow } from './report.js';
import { ldifPerson, peopleLdif, startSlapd } from './slapd.js';

const B = 'ldap';
const PEOPLE = 10_000;
const GROUPS = 20;
const BASE = 'dc=example,dc=org';
/** Runs of the no-change and one-change syncs and of the floor; the median kept. */
const RUNS = 5;

interface Measured {
  ms: number;
  cpuMs: number;
}

/** `work`'s wall time and this process's CPU time (user + system) while it ran. */
async function measure<T>(work: () => Promise<T>): Promise<Measured & { result: T }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await work();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000, result };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const medianOf = (runs: Measured[]): Measured => ({ ms: median(runs.map((r) => r.ms)), cpuMs: median(runs.map((r) => r.cpuMs)) });

function row(metric: string, value: number, unit: string, floor: number, floorLabel: string): BenchRow {
  return { bench: B, metric, value, unit, floor, floorLabel, ratio: value / floor, target: '', met: null };
}

export async function benchmarkLdap(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'ldap');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const slapd = await startSlapd(join(dir, 'slapd'), { ldif: peopleLdif({ count: PEOPLE, groups: GROUPS, baseDn: BASE }) });
  const db = openServiceSqlite(join(dir, 'service.db'));
  const logger = pino({ level: 'silent' });
  try {
    const options: LdapSourceOptions = identityServerSchema.parse({
      ldap: {
        url: slapd.ldapsUrl,
        caFile: slapd.caFile,
        bindDn: slapd.bindDn,
        bindPasswordFile: slapd.bindPasswordFile,
        users: { baseDn: `ou=people,${BASE}` },
        groups: { baseDn: `ou=groups,${BASE}` },
      },
    }).ldap!;
    // The schedule a day away: every sync here is the one asked for.
    await db.run("INSERT INTO identity_sync_state (source, next_at) VALUES ('ldap', ?)", [Date.now() + 86_400_000]);
    const key = await new ApiKeys(db).create('ADMIN', 0, Date.now());
    const app = buildService({ db, clock: systemClock, logger, resources: [], lockReplyTimeoutMs: 1000, identity: { ldap: options } });
    await app.ready();
    const sync = async (): Promise<SyncRunAnswer> => {
      const res = await app.inject({ method: 'POST', url: '/identity-sources/ldap/sync', headers: { authorization: `Bearer ${key}` }, payload: {} });
      const run = syncRunSchema.parse(res.json());
      if (run.outcome !== 'ok') throw new Error(`ldap bench: the sync was ${run.outcome}: ${run.reason}`);
      return run;
    };
    try {
      // A warm server for every figure (its first read loads slapd's caches).
      const reader = new LdapClientReader(options, { logger });
      await reader.read();

      // The first sync: 10,000 users made, with their groups.
      let peakRss = process.memoryUsage().rss;
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
      }, 20);
      const first = await measure(sync).finally(() => clearInterval(sampler));
      if (first.result.counts.created !== PEOPLE) throw new Error(`ldap bench: the first sync made ${first.result.counts.created} users, not ${PEOPLE}`);
      process.stdout.write(`  first sync of ${PEOPLE}: ${(first.ms / 1000).toFixed(2)} s\n`);

      // Taken in turn, so that a load that comes and goes weighs on both alike.
      const floors: Measured[] = [];
      const unchanged: Measured[] = [];
      const oneChange: Measured[] = [];
      for (let i = 0; i < RUNS; i++) {
        floors.push(await measure(() => reader.read()));
        const same = await measure(sync);
        if (same.result.counts.updated !== 0) throw new Error('ldap bench: a sync with nothing changed updated users');
        unchanged.push(same);
        const person = ldifPerson(1 + i * 97, BASE);
        await slapd.modify(`dn: ${person.dn}\nchangetype: modify\nreplace: sn\nsn: Changed${i}\n`);
        const run = await measure(sync);
        if (run.result.counts.updated !== 1) throw new Error(`ldap bench: a one-change sync updated ${run.result.counts.updated} users`);
        oneChange.push(run);
      }
      const floor = medianOf(floors);
      const none = medianOf(unchanged);
      const one = medianOf(oneChange);
      const readLabel = `LdapClientReader.read() alone, median of ${RUNS}`;
      return [
        row(`first sync of ${PEOPLE.toLocaleString('en-US')} (all created), wall`, first.ms, 'ms', floor.ms, readLabel),
        row(`first sync of ${PEOPLE.toLocaleString('en-US')}, service CPU`, first.cpuMs, 'ms', floor.cpuMs, 'the read alone, CPU'),
        infoRow(B, 'first sync, service peak RSS (sampled)', peakRss / 1024 / 1024, 'MB'),
        row(`sync with nothing changed, wall (median of ${RUNS})`, none.ms, 'ms', floor.ms, readLabel),
        row('sync with nothing changed, service CPU', none.cpuMs, 'ms', floor.cpuMs, 'the read alone, CPU'),
        row(`sync with one name changed, wall (median of ${RUNS})`, one.ms, 'ms', floor.ms, readLabel),
        row('sync with one name changed, service CPU', one.cpuMs, 'ms', floor.cpuMs, 'the read alone, CPU'),
      ];
    } finally {
      await app.close();
    }
  } finally {
    await db.close();
    await slapd.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
