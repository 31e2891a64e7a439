import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';

// What the demo leaves for a person to use beside it: its agent's config with the status and events lines that
// read it, the service's log in demo.log, and a terminal that says what it takes. The built CLI, typed at on its
// stdin, in a time zone where a 12-hour clock would show.
const tmp = tempDir('door-agent-demo-files-');
const dir = join(tmp.path, 'demo');
const ZONE = 'Asia/Tokyo';
let demo: ChildProcessWithoutNullStreams;
let out = '';

beforeAll(async () => {
  demo = spawn(process.execPath, [CLI, 'demo', '--dir', dir], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: ZONE } });
  demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
  demo.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await waitUntil(() => out.includes('Ctrl-C stops everything.') || demo.exitCode !== null, 60_000, 'the demo is ready');
  expect(out).toContain('Ctrl-C stops everything.');
  await waitUntil(() => out.includes('guest link 1 received'), 20_000, 'the door is synced and connected');
}, 90_000);
afterAll(async () => {
  if (demo.exitCode === null) {
    demo.kill('SIGINT');
    await new Promise((resolve) => demo.once('exit', resolve));
  }
  tmp.cleanup();
});

/** A line the demo printed, as a person copies it: trimmed. */
const printed = (needle: string) =>
  out
    .split('\n')
    .find((l) => l.includes(needle))
    ?.trim();
const paste = (line: string) => spawnSync('sh', ['-c', line], { cwd: tmp.path, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });

describe('door-agent demo, beside it', () => {
  it('writes its agent config into its directory, and prints status and events lines that work when pasted', async () => {
    const config = join(dir, 'agent.yaml');
    expect(printed('agent config')).toBe(`agent config       ${config}`);
    expect(readFileSync(config, 'utf8')).toContain(`dataDir: "${join(dir, 'agent')}"`);

    const status = printed(' status --config ');
    expect(status).toBe(`node ${CLI} status --config ${config}`);
    const shown = paste(status!);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`daemon: running (pid ${demo.pid}`);
    expect(shown.stdout).toMatch(/Front door \(6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d\): LOCKED/);

    demo.stdin.write('4213578\n');
    await waitUntil(() => out.includes('GRANTED  card …78'), 10_000, 'Alice granted');
    const events = printed(' events --config ');
    expect(events).toBe(`node ${CLI} events --config ${config}`);
    const listed = paste(events!);
    expect(listed.status, listed.stderr).toBe(0);
    const types = listed.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { type: string }).type);
    expect(types).toContain('access_granted');
  });

  it("keeps the service's log in demo.log", () => {
    const log = join(dir, 'demo.log');
    expect(existsSync(log)).toBe(true);
    const messages = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages).toEqual(expect.arrayContaining(['service ready', 'connected to the broker']));
  });

  it('answers input that is no card, PIN or token with one line saying what it takes', async () => {
    const said = () => out.split('\n').filter((l) => l.includes('not understood')).length;
    demo.stdin.write('hello\n');
    await waitUntil(() => said() === 1, 10_000, 'the answer to "hello"');
    expect(printed('not understood')).toMatch(/^\d\d:\d\d:\d\d {2}not understood: type a card number \(4213578\), a PIN ending with # \(1234#\) or a QR token/);
    // And the demo still takes cards.
    demo.stdin.write('4213579\n');
    await waitUntil(() => out.includes('DENIED   card …79: user_suspended'), 10_000, 'Bob refused');
    expect(said()).toBe(1);
  });

  it("shows every time in 24-hour form, in the agent's zone, the weekday hours of the banner too", async () => {
    expect(out).toContain(`times are ${ZONE}`);
    expect(out).toContain("Carol's visitor card: Mon-Fri 09:00-17:00");
    await waitUntil(() => /door UNLOCKED \(card …78\), relocks at/.test(out), 10_000, 'the unlock line');
    const unlocked = /^(\d\d):(\d\d):(\d\d) {2}door UNLOCKED \(card …78\), relocks at (\d\d):(\d\d):(\d\d)$/m.exec(out);
    expect(unlocked, out).not.toBeNull();
    // The hour is the agent's zone's (+09:00, no daylight saving), on a 24-hour clock.
    const hourThere = (ms: number) => new Date(ms + 9 * 3_600_000).getUTCHours();
    expect([hourThere(Date.now()), hourThere(Date.now() - 60_000)]).toContain(Number(unlocked![1]));
    expect(out).not.toMatch(/\d [AP]M/);
  });
});
