import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';

// Two real `door-agent run` processes on one data directory (issue 24, item 4), on the simulated GPIO driver.
// The first holds the door open (exit button, 60 s): a second one must not relock it, nor may `relock`.

const tmp = tempDir('door-agent-datadirlock-');
afterAll(tmp.cleanup);
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop('SIGKILL');
});

let n = 0;
function site() {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  const config = writeConfig(dir, { id: 'lock', doorExtra: '    unlockSeconds: 60\n    exitButton: { pin: 22, debounceMs: 20 }\n' });
  return { dir, config, dataDir: join(dir, 'data'), relay: join(dir, 'gpio/gpio17/value'), exit: join(dir, 'gpio/gpio22/value') };
}

async function startDaemon(config: string): Promise<Daemon> {
  const daemon = new Daemon(config);
  daemons.push(daemon);
  await daemon.waitForMessage('door-agent ready', 30_000);
  return daemon;
}

describe('one daemon per data directory', () => {
  it('a second run exits at once naming the first pid and the data directory, and leaves the door it holds open alone', async () => {
    const s = site();
    const first = await startDaemon(s.config);
    writeFileSync(s.exit, '0\n'); // the exit button: unlocked for 60 s
    await waitUntil(() => readLevel(s.relay) === '1', 10_000, 'exit button opens');
    writeFileSync(s.exit, '1\n');

    const second = new Daemon(s.config);
    daemons.push(second);
    const ended = await second.exited;
    const output = second.rawOutput.join('\n');
    expect(ended.code, output).toBe(1);
    expect(output).toContain(`another door-agent (pid ${first.pid}) is running on the data directory ${s.dataDir}`);
    expect(output).toContain('this one exits without touching any relay');
    expect(output).not.toContain('relays locked');
    expect(readLevel(s.relay)).toBe('1'); // still open: the second never drove it

    // status says the first is running, with its pid; relock refuses (it would fight the daemon) and drives nothing.
    const status = runCli(['status', '--config', s.config]);
    expect(status.stdout).toContain(`daemon: running (pid ${first.pid}`);
    expect(JSON.parse(runCli(['status', '--json', '--config', s.config]).stdout).daemon).toMatchObject({ running: true, pid: first.pid });
    const relock = runCli(['relock', '--config', s.config]);
    expect(relock.status).toBe(1);
    expect(relock.stderr).toContain(`another door-agent (pid ${first.pid}) is running on the data directory ${s.dataDir}; relock drives no relay`);
    expect(readLevel(s.relay)).toBe('1');
    // reader keyset would talk over the bus the daemon holds: refused the same way.
    const keyset = runCli(['reader', 'keyset', '--config', s.config]);
    expect(keyset.status).toBe(1);
    expect(keyset.stderr).toContain(
      `another door-agent (pid ${first.pid}) is running on the data directory ${s.dataDir}; reader keyset does not talk to a bus`,
    );
    // Nor does a run with an invalid configuration on the same directory, which would otherwise lock every relay.
    const invalid = join(s.dir, 'invalid.yaml');
    writeFileSync(invalid, readFileSync(s.config, 'utf8').replace('timezone: Europe/Berlin', 'timezone: Europe/Berlin, colour: red'));
    const bad = runCli(['run', '--config', invalid]);
    expect(bad.status, bad.stderr).toBe(1);
    expect(bad.stderr).toContain(
      `another door-agent (pid ${first.pid}) is running on the data directory ${s.dataDir}; this one exits without driving any relay`,
    );
    expect(readLevel(s.relay)).toBe('1');
    expect(first.exitCode).toBe(null);

    // Stopped: it locks on its way out, and relock (systemd's ExecStopPost) then works.
    expect(await first.stop('SIGTERM')).toMatchObject({ code: 0 });
    expect(readLevel(s.relay)).toBe('0');
    expect(runCli(['relock', '--config', s.config]).status).toBe(0);
    expect(runCli(['status', '--config', s.config]).stdout).toContain('daemon: not running');
  }, 120_000); // several CLI starts, each a few seconds on a loaded machine

  it('a SIGKILLed holder leaves no stale lock: relock and the next run start at once', async () => {
    const s = site();
    const first = await startDaemon(s.config);
    writeFileSync(s.exit, '0\n');
    await waitUntil(() => readLevel(s.relay) === '1', 10_000, 'exit button opens');
    await first.stop('SIGKILL');
    // Its pid file stays behind, naming a dead process; only the kernel's lock counts.
    expect(readFileSync(join(s.dataDir, 'daemon.pid'), 'utf8').trim()).toBe(String(first.pid));
    const relock = await runCliAsync(['relock', '--config', s.config]);
    expect(relock.status, relock.stderr).toBe(0);
    expect(readLevel(s.relay)).toBe('0');
    const next = await startDaemon(s.config);
    expect(runCli(['status', '--config', s.config]).stdout).toContain(`daemon: running (pid ${next.pid}`);
    expect(readFileSync(join(s.dataDir, 'daemon.pid'), 'utf8').trim()).toBe(String(next.pid));
  }, 120_000);
});
