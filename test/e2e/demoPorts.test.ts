import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, runCli, tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';

// The demo as a person runs it on a machine where 1883 and 8080 are taken (Debian's own mosquitto takes 1883):
// the built CLI, cards typed on its stdin, its transcript read as printed.
const tmp = tempDir('door-agent-demo-ports-');
const dir = join(tmp.path, 'demo');
const held: Server[] = [];
let demo: ChildProcessWithoutNullStreams | null = null;
let out = '';

/** Holds a port the way another program would; a port something else already holds is the same situation. */
function occupy(port: number): Promise<void> {
  const server = createServer();
  return new Promise((resolve, reject) =>
    server
      .once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve() : reject(err)))
      .listen(port, '127.0.0.1', () => {
        held.push(server);
        resolve();
      }),
  );
}

beforeAll(async () => {
  await occupy(1883);
  await occupy(8080);
});
afterAll(() => {
  demo?.kill('SIGKILL');
  for (const server of held) server.close();
  tmp.cleanup();
});

/** The decisions and relay changes printed after the banner, without their times. */
const transcript = () =>
  out
    .slice(out.indexOf('Ctrl-C stops everything.'))
    .split('\n')
    .map((l) => l.replace(/^\S+( [AP]M)?\s+/, ''))
    .filter((l) => /^(GRANTED|DENIED|door (UN)?LOCKED)/.test(l))
    .map((l) => l.replace(/, relocks at .*/, ''));

describe('door-agent demo with 1883 and 8080 taken', () => {
  it('starts on free ports it prints, and prints each decision before the door it moves', async () => {
    demo = spawn(process.execPath, [CLI, 'demo', '--dir', dir], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: 'UTC' } });
    demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
    demo.stderr.on('data', (d: Buffer) => (out += d.toString()));
    await waitUntil(() => out.includes('Ctrl-C stops everything.') || demo!.exitCode !== null, 60_000, 'the demo is ready');
    expect(out).not.toContain('EADDRINUSE');
    expect(out).toContain('Ctrl-C stops everything.');

    // The ports it uses, printed, and really its own: the broker answers MQTT, the service its API.
    const brokerPort = Number(/MQTT broker\s+mqtt:\/\/127\.0\.0\.1:(\d+)\s+\(1883 is taken by another program\)/.exec(out)?.[1]);
    const serviceUrl = /reference service\s+(http:\/\/127\.0\.0\.1:\d+)\s+\(8080 is taken by another program\)/.exec(out)?.[1];
    expect(brokerPort).toBeGreaterThan(0);
    expect(brokerPort).not.toBe(1883);
    expect(serviceUrl).toBeDefined();
    expect(serviceUrl).not.toContain(':8080');
    expect(out).toContain(`mosquitto_pub -h 127.0.0.1 -p ${brokerPort} `);
    const retained = spawnSync('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(brokerPort), '-t', 'door-agent/#', '-C', '1', '-W', '10'], {
      encoding: 'utf8',
    });
    expect(retained.status).toBe(0);
    const users = out
      .split('\n')
      .find((l) => l.includes(`${serviceUrl}/multipleusers`))!
      .trim();
    expect(spawnSync('sh', ['-c', users], { encoding: 'utf8' }).stdout).toContain('alice@example.org');
    // The console signs in at the address printed, on the port it took, by either name of loopback.
    const key = /sign in with this ADMIN API key:\n\s+(\S+)/.exec(out)?.[1];
    for (const origin of [serviceUrl!, `http://localhost:${new URL(serviceUrl!).port}`]) {
      const signIn = await fetch(`${serviceUrl}/console/signin`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: `api_key=${key}`,
      });
      expect(signIn.status, origin).toBe(303);
    }

    // A granted tap, a denied one and a PIN, typed as a person would.
    await waitUntil(() => out.includes('guest link 1 received'), 20_000, 'the door is synced and connected');
    demo.stdin.write('4213578\n');
    await waitUntil(() => transcript().includes('door LOCKED (timer)'), 20_000, 'the unlock ended');
    demo.stdin.write('4213579\n');
    await waitUntil(() => transcript().some((l) => l.startsWith('DENIED')), 10_000, 'Bob refused');
    demo.stdin.write('1234#\n');
    await waitUntil(() => transcript().filter((l) => l === 'door LOCKED (timer)').length === 2, 20_000, "the PIN's unlock ended");
    expect(transcript()).toEqual([
      'GRANTED  card …78',
      'door UNLOCKED (card …78)',
      'door LOCKED (timer)',
      'DENIED   card …79: user_suspended',
      'GRANTED  PIN',
      'door UNLOCKED (PIN)',
      'door LOCKED (timer)',
    ]);

    // A second demo on the directory this one uses refuses, naming it, and leaves everything in place.
    const second = runCli(['demo', '--dir', dir], { env: { TZ: 'UTC' } });
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`${dir} is in use by a running demo (pid ${demo.pid}`);
    expect(existsSync(join(dir, 'agent', 'cache.db'))).toBe(true);
    demo.stdin.write('4213578\n');
    await waitUntil(() => transcript().filter((l) => l === 'GRANTED  card …78').length === 2, 10_000, 'the first demo still decides');

    demo.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => demo!.once('exit', (c) => resolve(c)));
    expect(code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, '.door-agent-demo'), 'utf8'))).toMatchObject({ writtenBy: 'door-agent demo', pid: demo.pid });

    // The next start (npm start again) resets the directory its predecessor made, and runs.
    writeFileSync(join(dir, 'agent', 'leftover'), 'from the first run');
    out = '';
    demo = spawn(process.execPath, [CLI, 'demo', '--dir', dir], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: 'UTC' } });
    demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
    demo.stderr.on('data', (d: Buffer) => (out += d.toString()));
    await waitUntil(() => out.includes('Ctrl-C stops everything.') || demo!.exitCode !== null, 60_000, 'the second demo is ready');
    expect(existsSync(join(dir, 'agent', 'leftover'))).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, '.door-agent-demo'), 'utf8'))).toMatchObject({ pid: demo.pid });
    demo.kill('SIGINT');
    expect(await new Promise<number | null>((resolve) => demo!.once('exit', (c) => resolve(c)))).toBe(0);
  }, 240_000);
});
