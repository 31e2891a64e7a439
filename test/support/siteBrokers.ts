import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { MOSQUITTO, waitForPort } from './mosquitto.js';
import { freePort } from './net.js';
import { stopChild } from './process.js';

/**
 * A shipped example file with its placeholders filled in (value -> what the test uses). Every placeholder must be
 * in the file: an example that changes under the test fails here, rather than being tested half-filled.
 */
export function fillExample(path: string, replacements: Record<string, string>): string {
  let text = readFileSync(path, 'utf8');
  for (const [placeholder, value] of Object.entries(replacements)) {
    if (!text.includes(placeholder)) throw new Error(`${path} no longer holds "${placeholder}": update the test that fills it in`);
    text = text.replaceAll(placeholder, value);
  }
  return text;
}

/** A mosquitto password file with these users (mosquitto_passwd), mode 0600. */
export function writePasswords(path: string, users: Record<string, string>): void {
  writeFileSync(path, '', { mode: 0o600 });
  for (const [user, password] of Object.entries(users)) {
    const r = spawnSync('mosquitto_passwd', ['-b', path, user, password], { encoding: 'utf8' });
    if (r.error || r.status !== 0) throw new Error(`mosquitto_passwd failed (apt-get install mosquitto): ${r.stderr ?? r.error}`);
  }
}

/**
 * A real mosquitto run on a whole configuration: the test's own listener lines, then a shipped example's text.
 * Its log goes to `dir/mosquitto.log` (log()), for a failure to show what the broker did.
 */
export class ConfiguredMosquitto {
  private process: ChildProcess | null = null;

  constructor(
    private readonly dir: string,
    readonly port: number,
  ) {
    if (!MOSQUITTO) throw new Error('mosquitto is required for the MQTT tests: apt-get install mosquitto mosquitto-clients');
    mkdirSync(dir, { recursive: true });
  }

  /** `config`: everything after the lines that make it run here (its user, persistence in `dir`, its log). */
  async start(config: string): Promise<void> {
    const file = join(this.dir, 'mosquitto.conf');
    // As ourselves: as root, mosquitto would switch to its own user and could not read the test's files.
    const head = [`user ${userInfo().username}`, 'persistence true', `persistence_location ${this.dir}/`, `log_dest file ${join(this.dir, 'mosquitto.log')}`];
    writeFileSync(file, `${head.join('\n')}\n${config}\n`, { mode: 0o600 });
    this.process = spawn(MOSQUITTO!, ['-c', file], { stdio: 'ignore' });
    await waitForPort(this.port, 5000);
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, 'mosquitto.log'), 'utf8');
    } catch {
      return '';
    }
  }

  async stop(): Promise<void> {
    const proc = this.process;
    this.process = null;
    await stopChild(proc);
  }
}

/**
 * A TCP relay on a loopback port to `127.0.0.1:targetPort`: the link between two sites. cut() severs every
 * connection through it and refuses new ones (the port closed) until restore() listens on the same port again.
 */
export class TcpRelay {
  port = 0;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly targetPort: number) {}

  async start(): Promise<void> {
    if (this.server) return;
    if (this.port === 0) this.port = await freePort();
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const [a, b] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.sockets.add(a);
        a.pipe(b);
        a.on('error', () => b.destroy());
        a.on('close', () => {
          this.sockets.delete(a);
          b.destroy();
        });
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  restore(): Promise<void> {
    return this.start();
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}
