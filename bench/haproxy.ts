/**
 * HAProxy with the shipped example configuration (examples/haproxy/haproxy.cfg), templated for loopback without
 * root: the `service-cluster` benchmark's balancer in front of its service processes, and the tests' (test/support/
 * haproxy.ts imports the templating from here: tests may import bench/, bench never imports test/).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './wait.js';

// From bench/ in the sources and from dist/bench/ in the build alike: the repository holds examples/ beside both.
const here = resolve(fileURLToPath(import.meta.url), '..');
const root = existsSync(join(here, '../examples')) ? resolve(here, '..') : resolve(here, '../..');

/** The example configuration the repository ships (docs/reference-service.md, "A larger organization"). */
export const SHIPPED_HAPROXY_CONFIG = join(root, 'examples/haproxy/haproxy.cfg');

/** Debian's haproxy binary; fails naming the package when it is not installed. */
export function haproxyBinary(): string {
  const found = ['/usr/sbin/haproxy', ...(process.env.PATH ?? '').split(':').map((dir) => join(dir, 'haproxy'))].find((p) => existsSync(p));
  if (found === undefined) {
    throw new Error('haproxy is not installed: apt-get install haproxy (scripts/ensure-deps.sh installs it when run as root)');
  }
  return found;
}

/** Replaces the one line `pattern` matches (the config must have exactly one: a changed example fails here, by name). */
function replaceOnce(lines: string[], pattern: RegExp, what: string, replacement: (match: RegExpMatchArray) => string[]): string[] {
  const at = lines.flatMap((line, i) => (pattern.test(line) ? [i] : []));
  if (at.length !== 1) throw new Error(`the shipped haproxy.cfg has ${at.length} lines of ${what} (${pattern}), one is expected`);
  const i = at[0]!;
  return [...lines.slice(0, i), ...replacement(lines[i]!.match(pattern)!), ...lines.slice(i + 1)];
}

/**
 * The shipped configuration with only what a run on loopback, without root, must change: the frontend's address,
 * one `server` line per backend (the first shipped line's options kept), the stats socket in `dir`, the log on
 * stderr, and the lines that need root (chroot, user, group) left out. Every other line runs as shipped.
 */
export function templatedConfig(shipped: string, options: { frontPort: number; backends: Array<{ name: string; port: number }>; statsSocket: string }): string {
  let lines = shipped.split('\n').filter((line) => !/^\s*(chroot|user|group)\s/.test(line));
  lines = replaceOnce(lines, /^(\s*)log \/dev\/log\b.*$/, 'log to syslog', ([, indent]) => [`${indent}log stderr format raw local0`]);
  lines = replaceOnce(lines, /^(\s*)stats socket \S+(.*)$/, 'stats socket', ([, indent, rest]) => [`${indent}stats socket ${options.statsSocket}${rest}`]);
  lines = replaceOnce(lines, /^(\s*)bind \S+(.*)$/, 'bind', ([, indent, rest]) => [`${indent}bind 127.0.0.1:${options.frontPort}${rest}`]);
  const server = /^(\s*)server \S+ \S+(.*)$/;
  const first = lines.findIndex((line) => server.test(line));
  if (first < 0) throw new Error('the shipped haproxy.cfg has no server line');
  const [, indent, rest] = lines[first]!.match(server)!;
  const servers = options.backends.map((b) => `${indent}server ${b.name} 127.0.0.1:${b.port}${rest}`);
  lines = [...lines.slice(0, first), ...servers, ...lines.slice(first).filter((line) => !server.test(line))];
  return lines.join('\n');
}

/** Writes the shipped configuration, templated for loopback, into `dir`; returns its path. */
export function writeTemplatedConfig(dir: string, options: Parameters<typeof templatedConfig>[1]): string {
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, templatedConfig(readFileSync(SHIPPED_HAPROXY_CONFIG, 'utf8'), options));
  return file;
}

/** `show stat` on the stats socket: each server's status (UP, DOWN, ...) by name. */
async function serverStatus(statsSocket: string): Promise<Map<string, string>> {
  const text = await new Promise<string>((res, rej) => {
    const socket = connect(statsSocket);
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString()));
    socket.once('end', () => res(out));
    socket.once('error', rej);
    socket.write('show stat\n');
  });
  const [header, ...rows] = text.trim().split('\n');
  if (!header?.startsWith('# ')) throw new Error(`not the answer of show stat: ${text}`);
  const columns = header.slice(2).split(',');
  const states = new Map<string, string>();
  for (const row of rows) {
    const cells = row.split(',');
    const name = cells[columns.indexOf('svname')]!;
    if (name !== 'FRONTEND' && name !== 'BACKEND') states.set(name, cells[columns.indexOf('status')]!);
  }
  return states;
}

/** The balancer as the benchmark runs it: its process, stopped by stop(). */
export interface BenchHaproxy {
  pid: number;
  /** What its log says of the requests so far: how many, by status, and those not ended normally (`----`). */
  summary(): string;
  stop(): Promise<void>;
}

/**
 * The requests of an `option httplog` log, counted by status and by how their connection ended (the termination
 * state: `----` is a normal end; `CD--` the client went away during the data, `SD--` the service did, ...), with
 * the first few lines that did not end normally.
 */
function summarize(log: string): string {
  const requests = log.split('\n').filter((line) => line.includes('" ') || line.endsWith('"'));
  const counts = new Map<string, number>();
  const abnormal: string[] = [];
  for (const line of requests) {
    // client [date] frontend backend/server timers status bytes req_cookie resp_cookie termination_state ...
    const fields = line.split(' ');
    const key = `${fields[5]} ${fields[9]}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (fields[9] !== '----') abnormal.push(line);
  }
  const byKey = [...counts].map(([key, n]) => `${n}x ${key}`).join(', ');
  return `${requests.length} requests (${byKey})${abnormal.length > 0 ? `; not ended normally:\n  ${abnormal.slice(0, 5).join('\n  ')}` : ''}`;
}

/** HAProxy (the shipped config) on `frontPort` in front of `ports`; resolves once it sees every backend UP. */
export async function startHaproxy(dir: string, frontPort: number, ports: readonly number[]): Promise<BenchHaproxy> {
  const statsSocket = join(dir, 'haproxy.sock');
  const backends = ports.map((port, i) => ({ name: `service${i + 1}`, port }));
  // As shipped but for one log option: a connection that carried no request is logged too (`option dontlognull`
  // left out), so that one HAProxy closed or reset before any request shows in the summary.
  const file = join(dir, 'haproxy.cfg');
  const shipped = readFileSync(SHIPPED_HAPROXY_CONFIG, 'utf8').replace(/^\s*option dontlognull\b.*\n/m, '');
  writeFileSync(file, templatedConfig(shipped, { frontPort, backends, statsSocket }));
  // Its log (a line per request, with how each connection ended) in `dir`/haproxy.log.
  const logFile = join(dir, 'haproxy.log');
  const out = openSync(logFile, 'a');
  const child: ChildProcess = spawn(haproxyBinary(), ['-db', '-f', file], { cwd: dir, stdio: ['ignore', 'ignore', out] });
  closeSync(out);
  const log = () => readFileSync(logFile, 'utf8').slice(-20_000);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}) at start:\n${log()}`);
    const states = await serverStatus(statsSocket).catch(() => new Map<string, string>());
    if (backends.every((b) => states.get(b.name) === 'UP')) return { pid: child.pid!, summary: () => summarize(readFileSync(logFile, 'utf8')), stop };
    if (Date.now() - started > 30_000) {
      await stop();
      throw new Error(`haproxy: not every service process UP within 30 s (${JSON.stringify([...states])}):\n${log()}`);
    }
    await sleep(100);
  }
}
