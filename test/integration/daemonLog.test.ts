import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, runCli, tempDir, writeConfig } from '../support/cli.js';
import { freePort } from '../support/net.js';
import { waitUntil } from '../support/wait.js';

// Issue 53 item 1: the daemon's log read by journald (each line at its priority), by a person at a terminal, and by
// a machine (JSON). The real built daemon, on simulated GPIO, with a service that does not answer: its sync fails,
// which it logs as a warning, beside the info lines of its start.

const tmp = tempDir('door-agent-log-');
let config: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  const closedPort = await freePort();
  writeFileSync(join(tmp.path, 'api-key'), 'dak_test\n', { mode: 0o600 });
  config = writeConfig(tmp.path, {
    extra: `service: { baseUrl: "http://127.0.0.1:${closedPort}", apiKeyFile: ${tmp.path}/api-key, startDelaySeconds: 0, syncIntervalSeconds: 86400, timeoutSeconds: 5 }`,
  });
});

afterAll(async () => {
  for (const child of children) stopGroup(child);
  tmp.cleanup();
});

/** SIGTERM to the child's process group (the daemon, and `script` around it when there is one). */
function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    // already gone
  }
  return exited;
}

const SYNC_FAILED = /sync failed/;

describe('door-agent run: its log in the form its reader takes', () => {
  it('under systemd (stdout is the $JOURNAL_STREAM): each line carries its journald priority, so -p warning keeps only the warnings and worse', async () => {
    const file = join(tmp.path, 'journal.out');
    const out = openSync(file, 'w');
    const { dev, ino } = fstatSync(out);
    const child = spawn(process.execPath, [CLI, 'run', '--config', config], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', JOURNAL_STREAM: `${dev}:${ino}` },
      stdio: ['ignore', out, 'inherit'],
    });
    children.push(child);
    closeSync(out);
    const text = () => readFileSync(file, 'utf8');
    await waitUntil(() => text().includes('door-agent ready') && SYNC_FAILED.test(text()), 30_000, 'the daemon ready and its first sync failed');
    await stopGroup(child);
    // As journald reads a stream with SyslogLevelPrefix=yes (the default): "<N>" at the start of a line is its priority.
    const lines = text()
      .split('\n')
      .filter((l) => l !== '');
    const entries = lines.map((line) => {
      const match = /^<([0-7])>(\{.*\})$/.exec(line);
      expect(match, `a line without a priority prefix: ${line}`).not.toBeNull();
      return { priority: Number(match![1]), record: JSON.parse(match![2]!) as { level: number; msg: string } };
    });
    const warningsAndWorse = entries.filter((e) => e.priority <= 4);
    expect(warningsAndWorse.some((e) => SYNC_FAILED.test(e.record.msg))).toBe(true);
    expect(warningsAndWorse.every((e) => e.record.level >= 40)).toBe(true);
    expect(entries.find((e) => e.record.msg === 'door-agent ready')?.priority).toBe(6); // info
    expect(entries.filter((e) => e.priority > 4).every((e) => e.record.level < 40)).toBe(true);
  });

  it('at a terminal: local time in agent.timezone, the level by name, the message, then its fields; no JSON', async () => {
    // `script` gives the daemon a pseudo-terminal for its stdout, as an installer's ssh session does.
    const child = spawn('script', ['-qfec', `${process.execPath} ${CLI} run --config ${config}`, '/dev/null'], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    await waitUntil(() => output.includes('door-agent ready') && SYNC_FAILED.test(output), 30_000, 'the daemon ready and its first sync failed, at a terminal');
    await stopGroup(child);
    const lines = output.split(/\r?\n/).filter((l) => l !== '');
    expect(lines.some((l) => l.startsWith('{'))).toBe(false);
    const ready = lines.find((l) => l.includes('door-agent ready'))!;
    const match = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d):\d\d\.\d{3} INFO {2}door-agent ready/.exec(ready);
    expect(match, ready).not.toBeNull();
    // In the agent's zone (Europe/Berlin in this config), not UTC: the hour and minute a Berlin clock showed then.
    const berlin = (at: Date) =>
      new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at);
    const now = Date.now();
    expect([berlin(new Date(now)), berlin(new Date(now - 60_000)), berlin(new Date(now - 120_000))]).toContain(match![2]);
    const warning = lines.find((l) => SYNC_FAILED.test(l))!;
    expect(warning).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} WARN {2}/);
    expect(warning).toMatch(/ err="/); // the error's message, not its stack
  });

  it('--log-level warn --log-format json: JSON lines for a machine, nothing below a warning', async () => {
    const child = spawn(process.execPath, [CLI, 'run', '--config', config, '--log-level', 'warn', '--log-format', 'json'], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    await waitUntil(() => SYNC_FAILED.test(output), 30_000, 'the first sync failed');
    await stopGroup(child);
    const records = output
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(records.length).toBeGreaterThan(0);
    expect(records.every((r) => r.level >= 40)).toBe(true);
    expect(records.some((r) => r.msg === 'door-agent ready')).toBe(false);
  });

  it('a log level or format it does not know: a usage error naming what it takes, before any relay moves', () => {
    const format = runCli(['run', '--config', config, '--log-format', 'colour']);
    expect(format.status).toBe(2);
    expect(format.stderr).toContain('--log-format colour: must be one of auto, pretty, json, journal');
    const level = runCli(['run', '--config', config, '--log-level', 'loud']);
    expect(level.status).toBe(2);
    expect(level.stderr).toContain('--log-level loud: must be one of fatal, error, warn, info, debug, trace');
  });
});
