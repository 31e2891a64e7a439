import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { stopChild } from './process.js';
import { join } from 'node:path';
import { freePort } from './net.js';
import { sleep } from './wait.js';

/** The mosquitto binary (Debian: /usr/sbin), undefined when it is not installed. */
export const MOSQUITTO = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((p) => existsSync(p));

/** mosquitto's dynamic security plugin (Debian: mosquitto's own package), undefined when it is not installed. */
const DYNAMIC_SECURITY_PLUGIN = [
  '/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so',
  '/usr/lib/aarch64-linux-gnu/mosquitto_dynamic_security.so',
  '/usr/lib/mosquitto_dynamic_security.so',
].find((p) => existsSync(p));

/** A role of the dynamic security plugin: its name and ACLs (`{ acltype: 'publishClientSend', topic: 'x/#', allow: true }`). */
export interface DynamicSecurityRole {
  rolename: string;
  acls: Array<{ acltype: string; topic: string; allow: boolean }>;
}

/**
 * A broker run by the dynamic security plugin: its admin client (made by `mosquitto_ctrl dynsec init`, which may use
 * $CONTROL/dynamic-security), the roles made at start, and those of them the admin client holds as well.
 */
export interface DynamicSecurity {
  admin: { username: string; password: string };
  roles: DynamicSecurityRole[];
  adminRoles: string[];
}

/** Resolves once something listens on 127.0.0.1:`port` (a broker started a moment ago). */
export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const { connect } = await import('node:net');
  const started = Date.now();
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() - started > timeoutMs) throw new Error(`mosquitto did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

export interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

/** A CA and a server certificate for 127.0.0.1, made with openssl. */
export function makeTlsFiles(
  dir: string,
  name: string,
  server: { cn: string; altNames: string } = { cn: '127.0.0.1', altNames: 'IP:127.0.0.1,DNS:localhost' },
): TlsFiles {
  mkdirSync(dir, { recursive: true });
  const f = (n: string) => join(dir, `${name}-${n}`);
  const run = (args: string[]) => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    if (r.error || r.status !== 0) throw new Error(`openssl ${args[0]} failed (apt-get install openssl): ${r.stderr ?? r.error}`);
  };
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name} test CA`, '-keyout', f('ca.key'), '-out', f('ca.crt')]);
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${server.cn}`, '-keyout', f('server.key'), '-out', f('server.csr')]);
  writeFileSync(f('ext.cnf'), `subjectAltName=${server.altNames}\n`);
  run([
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    f('ext.cnf'),
    '-out',
    f('server.crt'),
  ]);
  return { ca: f('ca.crt'), cert: f('server.crt'), key: f('server.key') };
}

/** A real mosquitto broker on a free loopback port, started and stopped by the test. */
export class Mosquitto {
  private process: ChildProcess | null = null;
  port = 0;

  constructor(
    private readonly dir: string,
    private readonly tls?: TlsFiles,
    /** Keep sessions and queued QoS 1 messages across a restart (persistence to `dir`). */
    private readonly persistent = false,
    /** Users (name -> password) and an ACL (mosquitto acl_file text): anonymous clients are then refused. */
    private readonly auth?: { users: Record<string, string>; acl: string },
    /** The dynamic security plugin instead of `auth`: its clients and roles are made over $CONTROL at run time. */
    private readonly dynamicSecurity?: DynamicSecurity,
  ) {
    if (!MOSQUITTO)
      throw new Error('mosquitto is required for the MQTT tests: apt-get install mosquitto mosquitto-clients (npm test installs them when run as root)');
    mkdirSync(dir, { recursive: true });
  }

  get url(): string {
    return `${this.tls ? 'mqtts' : 'mqtt'}://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    // Already running: a second broker on the same port would fail to bind and leave this one behind, unstopped.
    if (this.process && this.process.exitCode === null && this.process.signalCode === null) return;
    if (this.port === 0) this.port = await freePort();
    const conf = join(this.dir, 'mosquitto.conf');
    // Run as ourselves: as root, mosquitto would switch to its own user and could not read the test's key files.
    const lines = [
      `user ${userInfo().username}`,
      `listener ${this.port} 127.0.0.1`,
      `allow_anonymous ${this.auth || this.dynamicSecurity ? 'false' : 'true'}`,
      'set_tcp_nodelay true',
    ];
    if (this.auth) {
      const passwords = join(this.dir, 'passwords');
      writeFileSync(passwords, '');
      for (const [user, password] of Object.entries(this.auth.users)) {
        const r = spawnSync('mosquitto_passwd', ['-b', passwords, user, password], { encoding: 'utf8' });
        if (r.error || r.status !== 0) throw new Error(`mosquitto_passwd failed (apt-get install mosquitto): ${r.stderr ?? r.error}`);
      }
      this.setAcl(this.auth.acl);
      lines.push(`password_file ${passwords}`, `acl_file ${join(this.dir, 'acl')}`);
    }
    if (this.dynamicSecurity) lines.push(...this.dynamicSecurityLines(this.dynamicSecurity));
    lines.push(...(this.persistent ? ['persistence true', `persistence_location ${this.dir}/`] : ['persistence false']));
    if (this.tls) lines.push(`cafile ${this.tls.ca}`, `certfile ${this.tls.cert}`, `keyfile ${this.tls.key}`);
    writeFileSync(conf, `${lines.join('\n')}\n`);
    this.process = spawn(MOSQUITTO!, ['-c', conf], { stdio: 'ignore' });
    await waitForPort(this.port, 5000);
  }

  /** The plugin's lines of mosquitto.conf, its file made at the first start (the admin, the roles). */
  private dynamicSecurityLines(security: DynamicSecurity): string[] {
    if (!DYNAMIC_SECURITY_PLUGIN) throw new Error("mosquitto's dynamic security plugin is required (apt-get install mosquitto)");
    const file = join(this.dir, 'dynamic-security.json');
    if (!existsSync(file)) {
      const { username, password } = security.admin;
      const r = spawnSync('mosquitto_ctrl', ['dynsec', 'init', file, username, password], { encoding: 'utf8' });
      if (r.error || r.status !== 0) throw new Error(`mosquitto_ctrl dynsec init failed (apt-get install mosquitto-clients): ${r.stderr ?? r.error}`);
      const data = JSON.parse(readFileSync(file, 'utf8')) as { clients: Array<{ username: string; roles: Array<{ rolename: string }> }>; roles: unknown[] };
      data.roles.push(...security.roles);
      data.clients.find((c) => c.username === username)!.roles.push(...security.adminRoles.map((rolename) => ({ rolename })));
      writeFileSync(file, JSON.stringify(data, null, 2));
    }
    return [`plugin ${DYNAMIC_SECURITY_PLUGIN}`, `plugin_opt_config_file ${file}`];
  }

  /** Writes the acl_file (call reload() for a running broker to read it). */
  setAcl(acl: string): void {
    writeFileSync(join(this.dir, 'acl'), acl);
  }

  /** SIGHUP: mosquitto reads its password and ACL files again, keeping its clients connected. */
  reload(): void {
    this.process?.kill('SIGHUP');
  }

  /** Freezes the broker (SIGSTOP): the TCP connection stays open but nothing answers, like a dead host. */
  freeze(): void {
    this.process?.kill('SIGSTOP');
  }

  thaw(): void {
    this.process?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    this.process?.kill('SIGCONT'); // a frozen broker cannot act on SIGTERM
    const proc = this.process;
    this.process = null;
    await stopChild(proc);
  }
}
