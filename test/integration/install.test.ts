import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { cleanCopy } from '../support/cleanCopy.js';
import { DOOR_UUID, ROOT, tempDir } from '../support/cli.js';
import { Daemon, readLevel } from '../support/daemon.js';
import { type Run, spawnRun } from '../support/process.js';
import { PtyPair } from '../support/socat.js';
import { waitUntil } from '../support/wait.js';

// A real install (npm ci with the native builds, from a clean copy): minutes on a loaded machine. The upgrade
// reuses its build (the dependencies did not change), as an upgrade on a door does.
vi.setConfig({ testTimeout: 45 * 60_000, hookTimeout: 120_000 });

const tmp = tempDir('door-agent-install-');
const SRC = join(tmp.path, 'src'); // the clean copy the installer runs from
const TR = join(tmp.path, 'root'); // the throwaway root it installs into
const APP = join(TR, 'opt/door-agent');
const WRAPPER = join(TR, 'usr/local/bin/door-agent');
const daemons: Daemon[] = [];
const pty = new PtyPair(join(tmp.path, 'reader'), join(tmp.path, 'terminal'));
afterAll(async () => {
  for (const d of daemons) await d.stop();
  await pty.unplug();
  tmp.cleanup();
});

function requireBuildTools(): void {
  const missing = ['python3', 'make', 'g++'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  if (missing.length > 0) {
    throw new Error(`the install test builds the native addons and needs ${missing.join(', ')}: sudo apt-get install -y ${missing.join(' ')}`);
  }
}

/** Runs the installer as root would, under a strict umask (as on a hardened system). */
function installFrom(src: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  // At a low priority: minutes of npm ci and native builds beside the rest of the suite (debPackage.test.ts's note).
  return spawnRun('nice', ['-n', '15', 'sh', '-c', 'umask 077 && exec bash "$0" "$@"', join(src, 'scripts/install.sh'), ...args], { env });
}
const install = (...args: string[]) => installFrom(SRC, ['--root', TR, ...args]);

/** The installed wrapper, as an operator runs it. */
function agent(...args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(WRAPPER, args, { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 120_000 });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const mode = (p: string) => (statSync(join(TR, p)).mode & 0o777).toString(8);
const doorFile = (dataDir: string) => join(dataDir, 'doors', `${DOOR_UUID}.json`);
const events = (config: string) =>
  agent('events', '--config', config)
    .stdout.trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** What the npm steps must never print: the nodedir warning of .npmrc, an engine mismatch, a header download. */
function expectQuietNpm(run: Run): void {
  const output = run.stdout + run.stderr;
  expect(output).not.toMatch(/Unknown (project |env )?config/i);
  expect(output).not.toContain('EBADENGINE');
  expect(output).not.toMatch(/gyp http GET|Downloading .*headers/i);
}

describe('scripts/install.sh: the build tools are checked before anything starts', () => {
  it('lists python3, make and the C++ compiler at once, with the apt-get line, and installs nothing', async () => {
    // A PATH with everything of this machine but the build tools.
    const bin = join(tmp.path, 'no-build-tools');
    mkdirSync(bin);
    for (const dir of ['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
      if (!existsSync(dir)) continue;
      for (const name of readdirSync(dir)) {
        if (/^(make|g\+\+|c\+\+|python3.*|.*-g\+\+.*)$/.test(name) || existsSync(join(bin, name))) continue;
        symlinkSync(join(dir, name), join(bin, name));
      }
    }
    const root = join(tmp.path, 'not-installed');
    const env = { PATH: bin, HOME: process.env.HOME ?? '/root' };
    const r = await installFrom(ROOT, ['--root', root], env);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.stderr).toContain('cannot build door-agent yet; missing:');
    for (const item of ['python3', 'make', 'a C++ compiler (g++)']) expect(r.stderr).toContain(`  - ${item}`);
    expect(r.stderr).toContain('sudo apt-get install -y python3 make g++');
    expect(existsSync(join(root, 'opt'))).toBe(false);
  });

  it('refuses an unknown option', async () => {
    const r = await installFrom(ROOT, ['--root', join(tmp.path, 'unused'), '--colour']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown option --colour');
  });
});

describe('scripts/install.sh from a clean copy of the tree, npm steps included', () => {
  const dataDir = join(tmp.path, 'data');
  const gpioDir = join(tmp.path, 'gpio');
  const config = join(tmp.path, 'config.yaml');
  const relay = join(gpioDir, 'gpio17/value');
  let firstRelockAt = 0;

  it('installs only what runs, built from the copy (no dev tools, no sources, no warnings)', async () => {
    requireBuildTools();
    cleanCopy(SRC);
    expect(existsSync(join(SRC, 'node_modules')) || existsSync(join(SRC, 'dist'))).toBe(false);
    const r = await install('--with-service');
    console.log(`install.sh (npm ci + native builds + build + prune, from a clean copy): ${r.seconds} s`);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expectQuietNpm(r);
    expect(r.stdout).toContain('wrote');
    expect(r.stdout).toContain('npm ci with the dev tools');
    expect(existsSync(join(TR, 'var/cache/door-agent/build/node_modules/better-sqlite3/build/Release/better_sqlite3.node'))).toBe(true);

    for (const p of [
      'dist/cli/door-agent.js',
      'dist/cli/syncWorker.js',
      'dist/cli/checkpointWorker.js',
      'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      'build/Release/sd_notify.node',
      'build/Release/gpio_chardev.node',
      'build/Release/evdev.node',
      'build/Release/sched_policy.node',
      'examples/snapshot.json',
      'scripts/hw-selftest.sh',
      'README.md',
      'INSTALLED',
    ]) {
      expect(existsSync(join(APP, p)), p).toBe(true);
    }
    // Only what runs: no compiler, no test runner, no TypeScript sources, no staging left behind.
    for (const p of [
      'node_modules/typescript',
      'node_modules/vitest',
      'node_modules/@types/better-sqlite3',
      'node_modules/smtp-server',
      'src',
      'test',
      'dist/bench',
      // tsc's output: the bundle in dist/cli runs alone.
      'dist/src',
      'tsconfig.json',
    ]) {
      expect(existsSync(join(APP, p)), p).toBe(false);
    }
    // Readable by the door-agent user although root's umask was 077.
    for (const p of ['opt/door-agent', 'opt/door-agent/dist/cli', 'opt/door-agent/node_modules/better-sqlite3']) expect(mode(p), p).toBe('755');
    for (const p of ['opt/door-agent/dist/cli/door-agent.js', 'opt/door-agent/build/Release/gpio_chardev.node', 'opt/door-agent/package.json']) {
      expect(Number.parseInt(mode(p), 8) & 0o044, p).toBe(0o044);
    }
    expect(readdirSync(join(TR, 'var/tmp'))).toEqual([]);
    expect(existsSync(`${APP}.new`)).toBe(false);
    // The wrapper follows --root, and is what runs below.
    expect(readFileSync(WRAPPER, 'utf8')).toContain(`"${APP}/dist/cli/door-agent.js" "$@"`);
    expect(mode('usr/local/bin/door-agent')).toBe('755');
    expect(readFileSync(join(TR, 'etc/systemd/system/door-agent.service'), 'utf8')).toContain('ExecStopPost=/usr/local/bin/door-agent relock');
    expect(existsSync(join(TR, 'etc/systemd/system/door-agent-service.service'))).toBe(true);
    expect(mode('etc/door-agent/service.yaml')).toBe('640');
    expect(mode('etc/door-agent/config.yaml')).toBe('640');
    expect(mode('etc/door-agent')).toBe('750');
  });

  it('config check passes on the installed example as shipped, naming what this machine lacks', () => {
    const shipped = join(TR, 'etc/door-agent/config.yaml');
    // The example as the repository has it, its first line naming the installed JSON Schema (docs/config-schema.md).
    const schema = join(APP, 'schema/config.schema.json');
    expect(existsSync(schema)).toBe(true);
    expect(readFileSync(shipped, 'utf8')).toBe(
      readFileSync(join(ROOT, 'config/door-agent.example.yaml'), 'utf8').replace('$schema=../schema/config.schema.json', `$schema=${schema}`),
    );
    const r = agent('config', 'check', '--config', shipped);
    // The example is the recommended setup: valid; hardware absent here is a warning (plugged in on the door), not an error.
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(`${shipped}: ok`);
    expect(r.stdout).toContain('gpio driver chardev');
    expect(r.stdout).toContain('reader /dev/ttyUSB0');
    if (!readdirSync('/dev').some((d) => d.startsWith('gpiochip'))) {
      expect(r.stdout).toContain('WARNING: gpio.driver chardev does not work on this machine');
    }
    // The reference service's example (--with-service) as shipped too.
    const service = agent('config', 'check', '--config', join(TR, 'etc/door-agent/service.yaml'));
    expect(service.status, service.stdout + service.stderr).toBe(0);
    expect(service.stdout).toContain('ok (reference service)');
  });

  it('the installed hardware self-test runs from the bundle alone: the relay clicks and is locked again, a tapped card is shown masked', async () => {
    // An installed tree has dist/cli and no tsc output: the script's steps 2-5 must import nothing else of ours.
    expect(existsSync(join(APP, 'dist/src'))).toBe(false);
    const dir = join(tmp.path, 'selftest');
    const stPty = new PtyPair(join(dir, 'reader'), join(dir, 'terminal'));
    mkdirSync(dir);
    const doc = parseDocument(readFileSync(join(TR, 'etc/door-agent/config.yaml'), 'utf8'));
    doc.setIn(['agent', 'dataDir'], join(dir, 'data'));
    doc.setIn(['gpio'], doc.createNode({ driver: 'simulated', simulatedDir: join(dir, 'gpio') }));
    doc.setIn(['doors', 0, 'reader', 'path'], stPty.devicePath);
    writeFileSync(join(dir, 'config.yaml'), doc.toString());
    const pin = doc.getIn(['doors', 0, 'relay', 'pin']) as number;
    await stPty.plugIn();
    try {
      // As docs/hardware.md has the installer run it (here with 4 s to watch the inputs and readers, not 20), the
      // configuration named relative to where they stand: every step, and the relock at the end, must find it.
      const child = spawn(join(APP, 'scripts/hw-selftest.sh'), ['config.yaml'], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HW_SELFTEST_SECONDS: '4' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
      await waitUntil(() => /reader .* connected/.test(stdout) || child.exitCode !== null, 60_000, 'the self-test opening the reader');
      stPty.write('0004213578\r\n'); // Alice's card
      expect(await exited, stdout + stderr).toBe(0);
      expect(stderr).not.toContain('ERR_MODULE_NOT_FOUND');
      expect(stderr).not.toContain('relock failed');
      expect(stdout).toContain('== 2. relays');
      const locked = new RegExp(`GPIO ${pin} locked \\(level (\\d)\\), reads back (\\d)`).exec(stdout);
      expect(locked, stdout).not.toBeNull();
      expect(locked![2]).toBe(locked![1]);
      expect(stdout).toContain(`GPIO ${pin} unlocked (level ${1 - Number(locked![1])})`);
      expect(stdout).toMatch(/: card …78/);
      expect(stdout).not.toContain('4213578');
      expect(stdout).toContain('== done');
      // Left locked, by the script and by the relock it ends with.
      expect(readLevel(join(dir, `gpio/gpio${pin}/value`))).toBe(locked![1]);
    } finally {
      await stPty.unplug();
    }
  });

  it('the installed binary with the example config (simulated GPIO, a pty reader) grants a tap', async () => {
    // The shipped example, changed only where a test must: data and GPIO files in the temp dir, the reader a pty,
    // a battery RTC (so the upgrade below resumes deterministically) and an unlock long enough to outlast an install.
    const doc = parseDocument(readFileSync(join(TR, 'etc/door-agent/config.yaml'), 'utf8'));
    doc.setIn(['agent', 'dataDir'], dataDir);
    doc.setIn(['agent', 'rtc'], true);
    doc.setIn(['gpio'], doc.createNode({ driver: 'simulated', simulatedDir: gpioDir }));
    doc.setIn(['doors', 0, 'reader', 'path'], pty.devicePath);
    doc.setIn(['doors', 0, 'unlockSeconds'], 3600);
    writeFileSync(config, doc.toString());
    await pty.plugIn();

    const imported = agent('import', join(APP, 'examples/snapshot.json'), '--config', config);
    expect(imported.status, imported.stdout + imported.stderr).toBe(0);

    const daemon = new Daemon(config, { entry: WRAPPER });
    daemons.push(daemon);
    await daemon.waitForMessage('door-agent ready', 60_000);
    expect(readLevel(relay)).toBe('0');
    // The reader's port opens after "ready": a line written before it would be lost (it was, beside a busy suite).
    await daemon.waitForMessage('reader connected', 60_000);
    pty.write('0004213578\r\n'); // Alice's card
    await waitUntil(() => readLevel(relay) === '1', 30_000, 'the relay unlocked by the tap');
    await waitUntil(() => events(config).some((e) => e.type === 'access_granted'), 30_000, 'the access_granted event');
    const granted = events(config).find((e) => e.type === 'access_granted')!;
    expect(granted).toMatchObject({ kind: 'card', door: DOOR_UUID, hint: '…78' });
    firstRelockAt = (JSON.parse(readFileSync(doorFile(dataDir), 'utf8')) as { relockAt: number }).relockAt;
    expect(firstRelockAt).toBeGreaterThan(Date.now() + 3000_000);
  });

  it('an upgrade over the running agent: stop locks, the old version is kept, the new one resumes the unlock to its deadline', async () => {
    const before = readFileSync(join(APP, 'INSTALLED'), 'utf8');
    const r = await install();
    console.log(`install.sh again (upgrade): ${r.seconds} s`);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expectQuietNpm(r);
    expect(r.stdout).toContain('kept the existing');
    expect(r.stdout).toContain('reusing its node_modules and addons (no npm ci');
    expect(r.stdout).toContain(`the previous version is kept in ${APP}.prev`);
    expect(readFileSync(join(`${APP}.prev`, 'INSTALLED'), 'utf8')).toBe(before);
    expect(readLevel(relay)).toBe('1'); // the old process still holds the unlock (no systemd in a test root)

    // What systemctl stop does: SIGTERM, then ExecStopPost (the new wrapper's relock).
    const old = daemons[0]!;
    await old.stop();
    expect(readLevel(relay)).toBe('0');
    const relock = agent('relock', '--config', config);
    expect(relock.status, relock.stderr).toBe(0);
    expect(readLevel(relay)).toBe('0');

    // systemctl start: the new program resumes the unlock (agent.rtc: true) with the same deadline.
    const upgraded = new Daemon(config, { entry: WRAPPER });
    daemons.push(upgraded);
    await upgraded.waitForMessage('door-agent ready', 60_000);
    await waitUntil(() => readLevel(relay) === '1', 30_000, 'the unlock resumed after the upgrade');
    const resumed = events(config).find((e) => e.type === 'unlocked' && e.cause === 'resumed after restart');
    expect(resumed, JSON.stringify(events(config))).toBeDefined();
    const relockAt = (JSON.parse(readFileSync(doorFile(dataDir), 'utf8')) as { relockAt: number }).relockAt;
    expect(Math.abs(relockAt - firstRelockAt)).toBeLessThan(1000);
    await upgraded.stop();
    expect(readLevel(relay)).toBe('0');
  });

  it('a changed package-lock.json is built again (npm ci), never taken from the build cache; a failed build leaves the program as it was', async () => {
    const lock = join(SRC, 'package-lock.json');
    const original = readFileSync(lock, 'utf8');
    const installed = readFileSync(join(APP, 'INSTALLED'), 'utf8');
    // An npm whose ci fails at once (a dependency that no longer builds, say), recording what it was asked.
    const bin = join(tmp.path, 'failing-npm');
    mkdirSync(bin, { recursive: true });
    const log = join(bin, 'calls');
    writeFileSync(
      join(bin, 'npm'),
      `#!/bin/sh\necho "npm $*" >> ${log}\nif [ "$1" = ci ]; then exit 1; fi\nexec ${spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim()} "$@"\n`,
      { mode: 0o755 },
    );
    try {
      writeFileSync(lock, `${original}\n`); // any change to the lock file
      const r = await installFrom(SRC, ['--root', TR], { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` });
      expect(r.status, r.stdout + r.stderr).not.toBe(0);
      expect(r.stdout).not.toContain('reusing');
      expect(readFileSync(log, 'utf8')).toMatch(/^npm ci /m);
      expect(readFileSync(join(APP, 'INSTALLED'), 'utf8')).toBe(installed);
      expect(existsSync(`${APP}.new`)).toBe(false);
      expect(readdirSync(join(TR, 'var/tmp'))).toEqual([]);
    } finally {
      writeFileSync(lock, original);
    }
  });

  it('--rollback swaps back to the previous version and forward again; --uninstall keeps the configuration', async () => {
    const current = readFileSync(join(APP, 'INSTALLED'), 'utf8');
    const previous = readFileSync(join(`${APP}.prev`, 'INSTALLED'), 'utf8');
    let r = await install('--rollback');
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(join(APP, 'INSTALLED'), 'utf8')).toBe(previous);
    expect(agent('config', 'check', '--config', config).status).toBe(0); // the previous version runs
    r = await install('--rollback');
    expect(readFileSync(join(APP, 'INSTALLED'), 'utf8')).toBe(current);

    writeFileSync(join(TR, 'etc/door-agent/config.yaml'), '# edited by the installer on the ladder\n');
    r = await install('--uninstall');
    expect(r.status, r.stderr).toBe(0);
    for (const gone of ['opt/door-agent', 'opt/door-agent.prev', 'usr/local/bin/door-agent', 'etc/systemd/system/door-agent.service']) {
      expect(existsSync(join(TR, gone)), gone).toBe(false);
    }
    expect(readFileSync(join(TR, 'etc/door-agent/config.yaml'), 'utf8')).toBe('# edited by the installer on the ladder\n');
    r = await install('--uninstall', '--purge');
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(TR, 'etc/door-agent'))).toBe(false);
    expect(existsSync(join(TR, 'var/cache/door-agent'))).toBe(false);
  });
});
