/**
 * A real OpenLDAP server (Debian's slapd) of the tests' and the benchmark's own: slapd.conf, back_mdb and the TLS
 * files in a directory, on free loopback ports, as the current user; the system's slapd is never used. The tests
 * (test/support/slapd.ts re-exports this: tests may import bench/, bench never imports test/) and the `ldap`
 * benchmark read people from it as the service reads an LDAP server or Active Directory
 * (docs/identity-sources.md, "LDAP and Active Directory").
 *
 * What it serves:
 * - the base dc=example,dc=org, a read-only service account cn=door-agent,ou=services,... (bindDn), the rootdn
 *   cn=admin,... (adminDn), each with its password in a 0600 file;
 * - `options.ldif` loaded with slapadd before the server starts (10,000 entries in about a second; ldapadd over
 *   the network takes far longer), for example peopleLdif()'s directory;
 * - with `activeDirectory`, a small schema of Active Directory's own attributes (ad-like.schema below, with AD's
 *   OIDs): user and computer, group, objectGUID (16 bytes), userAccountControl, sAMAccountName,
 *   userPrincipalName, and memberOf as a plain attribute kept on each user entry (AD computes it; here the LDIF
 *   and the test's modify() carry it). The standard schemas (inetOrgPerson, groupOfNames) are always there;
 * - limits as an Active Directory's MaxPageSize: a search without paging stops at 1000 entries (sizeLimitExceeded),
 *   a paged one is not limited; anonymous clients may read everything but a password, at most 1000 entries per
 *   search even when paged (so a test can meet a server's size limit).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './net.js';
import { sleep } from './wait.js';

export interface SlapdOptions {
  /** Default true: a CA and a server certificate for 127.0.0.1 and localhost, made with openssl into the dir. */
  tls?: boolean;
  /** Load the AD-like schema: user, group, userAccountControl, sAMAccountName, objectGUID, memberOf on users. */
  activeDirectory?: boolean;
  /** Entries loaded with slapadd before the server starts, under the base (which exists already): the fast way. */
  ldif?: string;
}

export interface Slapd {
  /** ldap://127.0.0.1:PORT (StartTLS available when tls). */
  ldapUrl: string;
  /** ldaps://127.0.0.1:PORT2 ('' without tls). */
  ldapsUrl: string;
  /** The CA's PEM, the one to pin ('' without tls). */
  caFile: string;
  /** A CA that did NOT sign the server's certificate ('' without tls). */
  otherCaFile: string;
  /** dc=example,dc=org */
  baseDn: string;
  adminDn: string;
  /** The rootdn's password, 0600, without a final newline (as ldapsearch -y wants it). */
  adminPasswordFile: string;
  /** A read-only service account: cn=door-agent,ou=services,dc=example,dc=org. */
  bindDn: string;
  /** Its password, 0600, with a final newline (as `echo secret > file` writes it). */
  bindPasswordFile: string;
  /** ldapadd as the admin. */
  add(ldif: string): Promise<void>;
  /** ldapmodify as the admin. */
  modify(ldif: string): Promise<void>;
  /** ldapdelete of one entry as the admin. */
  delete(dn: string): Promise<void>;
  /** Stops the server (its data kept): connections are then refused. */
  stop(): Promise<void>;
  /** Starts it again on the same ports with the same data. */
  start(): Promise<void>;
  /** Stops it and removes the directory. */
  close(): Promise<void>;
}

const BASE_DN = 'dc=example,dc=org';
const NOT_INSTALLED = 'slapd is not installed: run sudo bash scripts/ensure-deps.sh';
const SLAPD = '/usr/sbin/slapd';
const SLAPADD = '/usr/sbin/slapadd';
const MODULES = '/usr/lib/ldap';
const SCHEMAS = ['core', 'cosine', 'inetorgperson'].map((name) => `/etc/ldap/schema/${name}.schema`);

/** Active Directory's attributes and classes with AD's own OIDs, as small as the sync needs. */
const AD_LIKE_SCHEMA = `
attributetype ( 1.2.840.113556.1.4.2 NAME 'objectGUID' SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 EQUALITY octetStringMatch SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl' SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 EQUALITY integerMatch SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.221 NAME 'sAMAccountName' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 EQUALITY caseIgnoreMatch SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.656 NAME 'userPrincipalName' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 EQUALITY caseIgnoreMatch SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.2.102 NAME 'memberOf' SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 EQUALITY distinguishedNameMatch )
attributetype ( 1.2.840.113556.1.4.750 NAME 'groupType' SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 EQUALITY integerMatch SINGLE-VALUE )
objectclass ( 1.2.840.113556.1.5.9 NAME 'user' SUP organizationalPerson STRUCTURAL
  MAY ( mail $ givenName $ displayName $ employeeNumber $ userAccountControl $ sAMAccountName $ userPrincipalName $ objectGUID $ memberOf ) )
objectclass ( 1.2.840.113556.1.3.30 NAME 'computer' SUP user STRUCTURAL )
objectclass ( 1.2.840.113556.1.5.8 NAME 'group' SUP top STRUCTURAL MUST cn MAY ( member $ groupType $ objectGUID $ description $ mail ) )
`;

/** slapd's {SSHA} form of a password (what slappasswd makes). */
function ssha(password: string): string {
  const salt = randomBytes(8);
  const digest = createHash('sha1').update(password).update(salt).digest();
  return `{SSHA}${Buffer.concat([digest, salt]).toString('base64')}`;
}

/** slapd, its mdb backend, the schemas and ldap-utils (ldapadd, ldapmodify, ldapdelete): Debian's slapd and ldap-utils. */
function requireInstalled(): void {
  const needed = [SLAPD, SLAPADD, join(MODULES, 'back_mdb.so'), ...SCHEMAS];
  if (needed.some((path) => !existsSync(path))) throw new Error(NOT_INSTALLED);
  if (spawnSync('ldapadd', ['-VV']).error) throw new Error('ldap-utils (ldapadd) is not installed: run sudo bash scripts/ensure-deps.sh');
}

/** A CA, a server certificate it signed (127.0.0.1, localhost), and a second CA that signed nothing. */
function makeCertificates(dir: string): { ca: string; otherCa: string; cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const f = (name: string) => join(dir, name);
  const openssl = (args: string[]) => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    if (r.error || r.status !== 0) throw new Error(`openssl ${args[0]} failed (sudo bash scripts/ensure-deps.sh installs it): ${r.stderr ?? r.error}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-days', '30', '-subj', '/CN=door-agent test LDAP CA', '-keyout', f('ca.key'), '-out', f('ca.pem')]);
  openssl(['req', '-x509', ...ec, '-days', '30', '-subj', '/CN=some other CA', '-keyout', f('other-ca.key'), '-out', f('other-ca.pem')]);
  openssl(['req', ...ec, '-subj', '/CN=localhost', '-keyout', f('server.key'), '-out', f('server.csr')]);
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  openssl([
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '30',
    '-extfile',
    f('server.ext'),
    '-out',
    f('server.pem'),
  ]);
  return { ca: f('ca.pem'), otherCa: f('other-ca.pem'), cert: f('server.pem'), key: f('server.key') };
}

interface ConfigParts {
  dir: string;
  adminDn: string;
  adminPassword: string;
  bindDn: string;
  activeDirectory: boolean;
  tls: { ca: string; cert: string; key: string } | null;
}

function slapdConf(p: ConfigParts): string {
  const schemas = [...SCHEMAS, ...(p.activeDirectory ? [join(p.dir, 'ad-like.schema')] : [])];
  const tls = p.tls ? [`TLSCACertificateFile ${p.tls.ca}`, `TLSCertificateFile ${p.tls.cert}`, `TLSCertificateKeyFile ${p.tls.key}`] : [];
  const adIndexes = p.activeDirectory ? ['index objectGUID,sAMAccountName,memberOf eq'] : [];
  return [
    ...schemas.map((s) => `include ${s}`),
    `pidfile ${join(p.dir, 'slapd.pid')}`,
    `argsfile ${join(p.dir, 'slapd.args')}`,
    `modulepath ${MODULES}`,
    'moduleload back_mdb',
    ...tls,
    // As an Active Directory's MaxPageSize: without paging at most 1000 entries, paged without a total limit.
    'sizelimit size.soft=1000 size.hard=1000 size.prtotal=unlimited',
    'database mdb',
    'maxsize 1073741824',
    'dbnosync',
    `suffix "${BASE_DN}"`,
    `rootdn "${p.adminDn}"`,
    `rootpw ${ssha(p.adminPassword)}`,
    `directory ${join(p.dir, 'db')}`,
    'index objectClass,entryUUID,uid,mail,cn,member eq',
    ...adIndexes,
    'limits anonymous size.soft=1000 size.hard=1000 size.prtotal=1000',
    'access to attrs=userPassword by self write by anonymous auth by * none',
    // Everyone reads, nobody but the rootdn writes: the service account is read-only as a site's would be.
    'access to * by * read',
    '',
  ].join('\n');
}

/** The base, ou=services and the service account. */
function baseLdif(bindDn: string, bindPassword: string): string {
  return [
    `dn: ${BASE_DN}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n`,
    `dn: ou=services,${BASE_DN}\nobjectClass: organizationalUnit\nou: services\n`,
    `dn: ${bindDn}\nobjectClass: applicationProcess\nobjectClass: simpleSecurityObject\ncn: door-agent\nuserPassword: ${ssha(bindPassword)}\n`,
  ].join('\n');
}

/** A tool run to its end without blocking the event loop; rejects with what it printed. */
function run(command: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    // LDAPNOINIT: no /etc/ldap/ldap.conf nor ~/.ldaprc (the machine's defaults are not the test's).
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, LDAPNOINIT: '1' } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', (err) => reject(new Error(`${command}: ${err.message} (sudo bash scripts/ensure-deps.sh installs it)`)));
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} failed (${code}):\n${output}`))));
    child.stdin.end(input ?? '');
  });
}

/** Resolves once 127.0.0.1:port takes a connection. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startSlapd(dir: string, options: SlapdOptions = {}): Promise<Slapd> {
  const activeDirectory = options.activeDirectory ?? false;
  requireInstalled();
  mkdirSync(join(dir, 'db'), { recursive: true });
  const adminDn = `cn=admin,${BASE_DN}`;
  const bindDn = `cn=door-agent,ou=services,${BASE_DN}`;
  const adminPassword = randomBytes(12).toString('hex');
  const bindPassword = randomBytes(12).toString('hex');
  const adminPasswordFile = join(dir, 'admin-password');
  const bindPasswordFile = join(dir, 'bind-password');
  writeFileSync(adminPasswordFile, adminPassword, { mode: 0o600 });
  writeFileSync(bindPasswordFile, `${bindPassword}\n`, { mode: 0o600 });
  if (activeDirectory) writeFileSync(join(dir, 'ad-like.schema'), AD_LIKE_SCHEMA);
  const tls = (options.tls ?? true) ? makeCertificates(join(dir, 'tls')) : null;
  const conf = join(dir, 'slapd.conf');
  writeFileSync(conf, slapdConf({ dir, adminDn, adminPassword, bindDn, activeDirectory, tls }));

  const initial = join(dir, 'initial.ldif');
  writeFileSync(initial, `${baseLdif(bindDn, bindPassword)}\n${options.ldif ?? ''}`);
  await run(SLAPADD, ['-q', '-f', conf, '-l', initial]);
  rmSync(initial);

  const port = await freePort();
  const tlsPort = tls ? await freePort() : 0;
  const ldapUrl = `ldap://127.0.0.1:${port}`;
  const ldapsUrl = tls ? `ldaps://127.0.0.1:${tlsPort}` : '';
  const listen = [ldapUrl, ...(tls ? [ldapsUrl] : [])].map((url) => `${url}/`).join(' ');

  let child: ChildProcess | null = null;
  let log = '';
  const killOnExit = () => child?.kill('SIGKILL');
  const start = async () => {
    if (child) return;
    log = '';
    // -d none: in the foreground, printing only what slapd always says (its start-up errors among them).
    const proc = spawn(SLAPD, ['-f', conf, '-h', listen, '-d', 'none'], { stdio: ['ignore', 'ignore', 'pipe'] });
    proc.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-8192)));
    proc.once('exit', () => {
      if (child === proc) child = null;
      process.off('exit', killOnExit);
    });
    child = proc;
    process.once('exit', killOnExit);
    const started = Date.now();
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`slapd exited at start (${proc.exitCode ?? proc.signalCode}):\n${log}`);
      if ((await accepts(port)) && (!tls || (await accepts(tlsPort)))) return;
      if (Date.now() - started > 20_000) {
        await stop();
        throw new Error(`slapd did not listen on ${listen} within 20 s:\n${log}`);
      }
      await sleep(20);
    }
  };
  const stop = async () => {
    const proc = child;
    if (!proc) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    child = null;
  };
  const asAdmin = ['-x', '-H', ldapUrl, '-D', adminDn, '-y', adminPasswordFile];

  await start();
  return {
    ldapUrl,
    ldapsUrl,
    caFile: tls?.ca ?? '',
    otherCaFile: tls?.otherCa ?? '',
    baseDn: BASE_DN,
    adminDn,
    adminPasswordFile,
    bindDn,
    bindPasswordFile,
    add: (ldif) => run('ldapadd', asAdmin, ldif),
    modify: (ldif) => run('ldapmodify', asAdmin, ldif),
    delete: (dn) => run('ldapdelete', [...asAdmin, dn]),
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const FIRST_NAMES = ['Ada', 'Ben', 'Chloe', 'Dan', 'Eve', 'Farid', 'Grace', 'Hugo', 'Ines', 'Jon', 'Kim', 'Lea', 'Mo', 'Nina', 'Omar', 'Pia'];
const LAST_NAMES = ['Abbott', 'Berg', 'Costa', 'Dahl', 'Evans', 'Fischer', 'Garcia', 'Haas', 'Ito', 'Jensen', 'Khan', 'Lund', 'Meyer'];

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** One person of peopleLdif() (1 <= index <= count): what the entry holds. */
export interface LdifPerson {
  /** As the LDIF writes it (AD: CN=p00001,OU=people,...); slapd answers it with its attribute names in lower case. */
  dn: string;
  /** uid (openldap) or sAMAccountName (AD): p00001. */
  username: string;
  /** p00001@example.org */
  email: string;
  firstName: string;
  lastName: string;
  /** Active Directory only: the objectGUID's 16 bytes as lower-case hex (what the reader gives as the id). */
  objectGuid: string;
}

/** Person `index` of peopleLdif() under `baseDn`. */
export function ldifPerson(index: number, baseDn: string, activeDirectory = false): LdifPerson {
  const username = `p${pad(index, 5)}`;
  return {
    dn: activeDirectory ? `CN=${username},OU=people,${baseDn}` : `uid=${username},ou=people,${baseDn}`,
    username,
    email: `${username}@example.org`,
    firstName: FIRST_NAMES[index % FIRST_NAMES.length]!,
    lastName: LAST_NAMES[Math.floor(index / FIRST_NAMES.length) % LAST_NAMES.length]!,
    objectGuid: guid(`person ${index}`).toString('hex'),
  };
}

/** The name (cn) and DN of group `index` (1-based) of peopleLdif() under `baseDn`. */
export function ldifGroup(index: number, baseDn: string, activeDirectory = false): { name: string; dn: string; objectGuid: string } {
  const name = `group${pad(index, 3)}`;
  return {
    name,
    dn: activeDirectory ? `CN=${name},OU=groups,${baseDn}` : `cn=${name},ou=groups,${baseDn}`,
    objectGuid: guid(`group ${index}`).toString('hex'),
  };
}

/** Person `index` is in group ((index - 1) mod groups) + 1: every group has people when groups <= count. */
export function ldifGroupOf(personIndex: number, groups: number): number {
  return ((personIndex - 1) % groups) + 1;
}

/** A deterministic 16-byte id (an objectGUID of the LDIF's own). */
function guid(seed: string): Buffer {
  return createHash('sha256').update(seed).digest().subarray(0, 16);
}

/**
 * LDIF of a directory of `count` people (inetOrgPerson, or AD-like users: objectClass user, userAccountControl 512,
 * sAMAccountName, userPrincipalName, objectGUID, memberOf) under ou=people and `groups` groups (groupOfNames, or AD
 * groups, with their member DNs) under ou=groups, both OUs included; deterministic (ldifPerson, ldifGroup say what
 * each entry holds). Every person is enabled and in one group (ldifGroupOf). `baseDn` must exist already (the
 * server's base, or an OU the LDIF before this one makes).
 */
export function peopleLdif(opts: { count: number; groups: number; baseDn: string; activeDirectory?: boolean }): string {
  const ad = opts.activeDirectory ?? false;
  if (opts.groups > opts.count) throw new Error(`peopleLdif: ${opts.groups} groups for ${opts.count} people: a group needs a member`);
  const ou = (name: string) => `dn: ${ad ? 'OU' : 'ou'}=${name},${opts.baseDn}\nobjectClass: organizationalUnit\nou: ${name}\n`;
  const entries = [ou('people'), ou('groups')];
  const members = Array.from({ length: opts.groups }, (): string[] => []);
  for (let i = 1; i <= opts.count; i++) {
    const p = ldifPerson(i, opts.baseDn, ad);
    const group = opts.groups > 0 ? ldifGroupOf(i, opts.groups) : 0;
    if (group > 0) members[group - 1]!.push(p.dn);
    const common = `cn: ${p.username}\ngivenName: ${p.firstName}\nsn: ${p.lastName}\nmail: ${p.email}\n`;
    entries.push(
      ad
        ? `dn: ${p.dn}\nobjectClass: user\n${common}sAMAccountName: ${p.username}\nuserPrincipalName: ${p.email}\n` +
            `userAccountControl: 512\nobjectGUID:: ${Buffer.from(p.objectGuid, 'hex').toString('base64')}\n` +
            (group > 0 ? `memberOf: ${ldifGroup(group, opts.baseDn, true).dn}\n` : '')
        : `dn: ${p.dn}\nobjectClass: inetOrgPerson\nuid: ${p.username}\n${common}`,
    );
  }
  for (let g = 1; g <= opts.groups; g++) {
    const group = ldifGroup(g, opts.baseDn, ad);
    const memberLines = members[g - 1]!.map((dn) => `member: ${dn}\n`).join('');
    entries.push(
      ad
        ? `dn: ${group.dn}\nobjectClass: group\ncn: ${group.name}\ngroupType: -2147483646\nobjectGUID:: ${Buffer.from(group.objectGuid, 'hex').toString('base64')}\n${memberLines}`
        : `dn: ${group.dn}\nobjectClass: groupOfNames\ncn: ${group.name}\n${memberLines}`,
    );
  }
  return `${entries.join('\n')}\n`;
}
