import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ed25519FromPem, signFleet } from '../../src/protocol/fleetSigning.js';
import { ApiKeys, keyDigest } from '../../src/service/apiKeys.js';
import { openServiceDatabase } from '../../src/service/database.js';
import { SqliteDb } from '../../src/service/sql/sqliteDb.js';
import { cleanCopy } from '../support/cleanCopy.js';
import { DOOR_UUID, ROOT, tempDir } from '../support/cli.js';
import { Daemon, readLevel } from '../support/daemon.js';
import { freePort } from '../support/net.js';
import { type Run, spawnRun } from '../support/process.js';
import { startServiceProcess } from '../support/serviceProcess.js';
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
    // The root unit that installs an update the daemon downloaded, started by its path unit (docs/fleet.md).
    expect(readFileSync(join(TR, 'etc/systemd/system/door-agent-update.path'), 'utf8')).toContain('PathExists=/var/lib/door-agent/fleet/update-request.json');
    expect(readFileSync(join(TR, 'etc/systemd/system/door-agent-update.service'), 'utf8')).toContain(
      'ExecStart=/usr/local/bin/door-agent update apply --request /var/lib/door-agent/fleet/update-request.json',
    );
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

  // Signed updates (docs/fleet.md, "Signed updates"): the installed program bundled again as newer versions
  // (scripts/release-bundle.sh --program: no second npm ci), signed with the release key `service fleet-keys` made,
  // applied with `door-agent update apply --root` through the installed wrapper. No systemd in a test root: the
  // updater stops the daemon as systemd does (SIGTERM, then `relock` as ExecStopPost) and runs the new one itself.
  const keys = join(tmp.path, 'fleet-keys');
  const bundles = join(tmp.path, 'bundles');
  const arch = spawnSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).stdout.trim();
  const versionOf = (dir: string) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  const bump = (version: string, by: number) => version.replace(/\d+$/, (patch) => String(Number(patch) + by));
  const installedFile = (dir: string) => readFileSync(join(dir, 'INSTALLED'), 'utf8');
  const daemonPid = () => Number(readFileSync(join(dataDir, 'daemon.pid'), 'utf8'));
  const alive = (pid: number) => spawnSync('kill', ['-0', String(pid)]).status === 0;
  const steps = () => JSON.parse(readFileSync(join(dataDir, 'fleet/update-result.json'), 'utf8')) as Array<{ version: string; state: string; detail: string }>;
  afterAll(() => {
    // The daemon an update left running (its own session): stopped, if a test ended before it did.
    const pid = existsSync(join(dataDir, 'daemon.pid')) ? daemonPid() : 0;
    if (pid > 0 && alive(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(APP)) process.kill(pid, 'SIGTERM');
  });

  /** The installed program as `version`: a copy of hard links, the files that change written anew (never through a link). */
  function programAs(version: string, change: (write: (file: string, text: string) => void) => void = () => {}): string {
    const dir = join(tmp.path, `program-${version}`);
    expect(spawnSync('cp', ['-al', APP, dir]).status).toBe(0);
    const write = (file: string, text: string) => {
      rmSync(join(dir, file));
      writeFileSync(join(dir, file), text);
    };
    write('package.json', JSON.stringify(Object.assign(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as object, { version }), null, 2));
    write('INSTALLED', `${installedFile(dir)}bundled as ${version} by install.test.ts\n`);
    change(write);
    return dir;
  }
  async function bundleOf(dir: string): Promise<string> {
    const r = await spawnRun('bash', [join(SRC, 'scripts/release-bundle.sh'), '--program', dir, '--out', bundles]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const bundle = join(bundles, `door-agent-${versionOf(dir)}-${arch}.tar.gz`);
    expect(r.stdout).toContain(`built ${bundle}`);
    return bundle;
  }
  const sign = (bundle: string, keyDir = keys) => {
    const r = agent('release', 'sign', '--key', join(keyDir, 'release.key'), bundle);
    expect(r.status, r.stdout + r.stderr).toBe(0);
  };
  const update = (bundle: string, ...args: string[]) =>
    spawnRun(WRAPPER, ['update', 'apply', bundle, '--release-key', join(keys, 'release.pub'), '--root', TR, '--config', config, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
  /** The relay's levels while `during` runs, each change once. */
  async function relayDuring<T>(during: Promise<T>): Promise<{ result: T; levels: string[] }> {
    const levels: string[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const level = readLevel(relay);
        // '' is a torn read: the simulated driver writes the file anew when a process opens the pin (at its locked level).
        if (level !== '' && levels.at(-1) !== level) levels.push(level);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const result = await during;
    watching = false;
    await watch;
    return { result, levels };
  }

  it('update apply: a newer signed bundle installs beside the running version, the door locked during the switch; kept once healthy', async () => {
    const made = agent('service', 'fleet-keys', '--out', keys);
    expect(made.status, made.stderr).toBe(0);
    // The health is asked on the control socket: here one in the test's directory (the example's is systemd's /run/door-agent).
    const doc = parseDocument(readFileSync(config, 'utf8'));
    doc.setIn(['agent', 'controlSocket'], join(tmp.path, 'control.sock'));
    writeFileSync(config, doc.toString());
    const old = new Daemon(config, { entry: WRAPPER });
    daemons.push(old);
    await old.waitForMessage('door-agent ready', 60_000);
    await old.waitForMessage('reader connected', 60_000);
    await waitUntil(() => readLevel(relay) === '1', 30_000, 'the hour-long unlock of the tap above, resumed'); // an unlock in progress
    const before = versionOf(APP);
    const installedBefore = installedFile(APP);
    const good = bump(before, 1);
    const bundle = await bundleOf(programAs(good));
    sign(bundle);

    const { result: r, levels } = await relayDuring(update(bundle, '--health-seconds', '120'));
    console.log(`update apply (verify, unpack, switch, health): ${r.seconds} s`);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('door-agent stopped: every relay locked');
    expect(r.stdout).toContain(`${good} healthy`);
    // Energized before; locked from the old version's stop until the new one resumed the unlock; never in between.
    expect(levels).toEqual(['1', '0', '1']);
    expect(await old.exited).toEqual({ code: 0, signal: null });
    const running = daemonPid();
    expect(running).not.toBe(old.pid);
    expect(alive(running)).toBe(true);
    expect(agent('--version').stdout.trim()).toBe(good);
    expect(readFileSync(join(APP, 'RELEASE.json'), 'utf8')).toContain(`"version": "${good}"`);
    expect(installedFile(`${APP}.prev`)).toBe(installedBefore);
    for (const gone of [`${APP}.new`, `${APP}.prev-kept`]) expect(existsSync(gone), gone).toBe(false);
    const relockAt = (JSON.parse(readFileSync(doorFile(dataDir), 'utf8')) as { relockAt: number }).relockAt;
    expect(Math.abs(relockAt - firstRelockAt)).toBeLessThan(1000); // resumed to the deadline the first tap set
    expect(steps().map((s) => [s.version, s.state])).toEqual([
      [good, 'installing'],
      [good, 'healthy'],
    ]);
    expect((statSync(join(dataDir, 'fleet/update-result.json')).mode & 0o777).toString(8)).toBe('600');
  });

  it('update apply: a version that fails to start is rolled back within the bound, by itself; the relay never energized', async () => {
    const locked = agent('lock', '--door', DOOR_UUID, '--config', config);
    expect(locked.status, locked.stderr).toBe(0);
    expect(readLevel(relay)).toBe('0');
    const running = daemonPid();
    const good = versionOf(APP);
    const [installed, previous] = [installedFile(APP), installedFile(`${APP}.prev`)];
    const failing = bump(good, 1);
    const bundle = await bundleOf(programAs(failing, (write) => write('dist/cli/door-agent.js', "throw new Error('this build does not start');\n")));
    sign(bundle);

    const { result: r, levels } = await relayDuring(update(bundle, '--health-seconds', '60'));
    console.log(`update apply of a version that fails (switch, fail, switch back, health): ${r.seconds} s`);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.seconds).toBeLessThan(60);
    expect(r.stderr).toMatch(
      new RegExp(
        `update rolled back: ${failing} was not healthy \\(door-agent run ended \\(exit 1\\): Error: this build does not start\\); rolled back to ${good}`,
      ),
    );
    expect(levels).toEqual(['0']);
    expect(agent('--version').stdout.trim()).toBe(good);
    expect([installedFile(APP), installedFile(`${APP}.prev`)]).toEqual([installed, previous]);
    for (const gone of [`${APP}.new`, `${APP}.prev-kept`]) expect(existsSync(gone), gone).toBe(false);
    const again = daemonPid();
    expect(again).not.toBe(running);
    expect(alive(again)).toBe(true);
    expect(steps().slice(-2)).toEqual([
      expect.objectContaining({ version: failing, state: 'installing' }),
      expect.objectContaining({ version: failing, state: 'rolled_back', detail: expect.stringContaining('Error: this build does not start') }),
    ]);
  });

  it('update apply refuses, replacing nothing: unsigned, another key, truncated, another architecture, older, a path out of the tree', async () => {
    const version = versionOf(APP);
    const unchanged = () => [installedFile(APP), installedFile(`${APP}.prev`), daemonPid(), existsSync(`${APP}.new`)];
    const before = unchanged();
    // A program of two files is enough: each is refused before it would run.
    const tiny = (v: string, extra: Record<string, string> = {}) => {
      const dir = join(tmp.path, `tiny-${v}`);
      mkdirSync(join(dir, 'dist/cli'), { recursive: true });
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'door-agent', version: v }));
      writeFileSync(join(dir, 'dist/cli/door-agent.js'), '');
      for (const [file, text] of Object.entries(extra)) writeFileSync(join(dir, file), text);
      return dir;
    };
    const refused = async (bundle: string, message: RegExp, ...args: string[]) => {
      const r = await update(bundle, ...args);
      expect(r.status, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).toMatch(/update refused, nothing replaced: /);
      expect(r.stderr).toMatch(message);
      expect(steps().at(-1)).toMatchObject({ state: 'refused', detail: expect.stringMatching(message) });
      expect(unchanged()).toEqual(before);
    };
    const newer = await bundleOf(tiny(bump(version, 5)));
    await refused(newer, /no signature: .*\.sig\.json does not exist/);
    mkdirSync(join(tmp.path, 'other'));
    expect(agent('service', 'fleet-keys', '--out', join(tmp.path, 'other/keys')).status).toBe(0);
    sign(newer, join(tmp.path, 'other/keys'));
    await refused(newer, /does not verify with the release key/);
    sign(newer);
    const cut = join(bundles, 'cut.tar.gz');
    writeFileSync(cut, readFileSync(newer).subarray(0, 100));
    writeFileSync(`${cut}.sig.json`, readFileSync(`${newer}.sig.json`));
    await refused(cut, /is 100 bytes, the signed manifest says \d+: truncated/);
    // As a release built on a board of another architecture would be signed.
    const other = arch === 'arm64' ? 'armhf' : 'arm64';
    const { manifest } = JSON.parse(readFileSync(`${newer}.sig.json`, 'utf8')) as { manifest: Record<string, unknown> };
    const foreign = Object.assign({}, manifest, { arch: other });
    const signature = signFleet(ed25519FromPem(readFileSync(join(keys, 'release.key'), 'utf8'), 'private'), 'release', foreign);
    writeFileSync(join(bundles, 'foreign.sig.json'), JSON.stringify({ manifest: foreign, signature }));
    await refused(newer, new RegExp(`is built for ${other}; this board is ${arch}`), '--signature', join(bundles, 'foreign.sig.json'));
    const older = await bundleOf(tiny('0.0.1'));
    sign(older);
    await refused(older, new RegExp(`version 0.0.1 is older than the installed ${version.replace(/\./g, '\\.')}: .*--allow-downgrade`));
    // A bundle whose tar names ../escape (GNU tar -P keeps it): refused while it unpacks, nothing left.
    const evilDir = tiny(bump(version, 6), { escape: 'x' });
    mkdirSync(join(evilDir, 'meta'));
    writeFileSync(join(evilDir, 'meta/RELEASE.json'), JSON.stringify({ version: bump(version, 6), arch, node_abi: process.versions.modules }));
    const evil = join(bundles, 'evil.tar.gz');
    const tar = spawnSync('tar', [
      '--format=gnu',
      '-P',
      '-czf',
      evil,
      '-C',
      join(evilDir, 'meta'),
      'RELEASE.json',
      '-C',
      evilDir,
      '--transform=s,^escape$,../escape,',
      'escape',
    ]);
    expect(tar.status, tar.stderr?.toString()).toBe(0);
    sign(evil);
    await refused(evil, /\.\.\/escape has a "\.\." part/);
    expect(existsSync(join(TR, 'opt/escape'))).toBe(false);
    // A release key file others may write: whoever can write it chooses what root installs.
    const looseDir = join(tmp.path, 'loose-key');
    mkdirSync(looseDir, { mode: 0o755 });
    writeFileSync(join(looseDir, 'release.pub'), readFileSync(join(keys, 'release.pub')), { mode: 0o666 });
    chmodSync(join(looseDir, 'release.pub'), 0o666);
    const loose = await spawnRun(WRAPPER, ['update', 'apply', newer, '--release-key', join(looseDir, 'release.pub'), '--root', TR, '--config', config], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    expect(loose.status, loose.stdout + loose.stderr).toBe(1);
    expect(loose.stderr).toContain(`${join(looseDir, 'release.pub')} must belong to root and be writable by root only (it is uid 0, mode 666)`);
    expect(unchanged()).toEqual(before);

    // The daemon the updates left running, stopped as systemd would: the door stays locked.
    const pid = daemonPid();
    process.kill(pid, 'SIGTERM');
    await waitUntil(() => !existsSync(join(dataDir, 'daemon.pid')), 30_000, 'the daemon stopped (its lock let go)');
    expect(readLevel(relay)).toBe('0');
  });

  it('a rollout from the service: the installed daemon takes the offer, the root unit (played here) installs it and the new version reports healthy; a build that fails rolls back, and its rollout stops at the canary', async () => {
    // The service (server.fleet with the release key made above), the installed daemon adopted as an agent of
    // it, and a second agent (its row only) that a stopped rollout must never reach.
    const svcDir = join(tmp.path, 'fleet-service');
    mkdirSync(svcDir);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const serviceConfig = join(svcDir, 'service.yaml');
    writeFileSync(
      serviceConfig,
      `server:\n  listen: 127.0.0.1:${port}\n  publicUrl: ${base}\n  dataDir: ${svcDir}\n  fleet: { identityKeyFile: ${join(keys, 'identity.key')}, releasePublicKeyFile: ${join(keys, 'release.pub')} }\n`,
    );
    const service = await startServiceProcess(serviceConfig, { captureStderr: true });
    const agentId = String(parseDocument(readFileSync(config, 'utf8')).getIn(['agent', 'id']));
    let admin = '';
    const db = new SqliteDb(openServiceDatabase(join(svcDir, 'service.db')));
    try {
      const apiKeys = new ApiKeys(db);
      admin = await apiKeys.create('ADMIN', 0, Date.now());
      for (const id of [agentId, 'zz-second-door']) {
        const key = await apiKeys.create('DOOR', 0, Date.now());
        const keyId = await db.value<number>('SELECT key_id FROM api_keys WHERE key_hash = ?', [keyDigest(key)]);
        const facts = { hostname: id, version: versionOf(APP), arch, node: process.version, gpio_chips: [], serial_devices: [] };
        await db.run("INSERT INTO fleet_agents (enrolment_id, agent_id, state, facts, enrolled_at, key_id) VALUES (?, ?, 'adopted', ?, ?, ?)", [
          randomUUID(),
          id,
          JSON.stringify(facts),
          Date.now(),
          Number(keyId),
        ]);
        if (id === agentId) writeFileSync(join(tmp.path, 'fleet-agent.key'), `${key}\n`, { mode: 0o600 });
      }
    } finally {
      await db.close();
    }
    const api = async (method: string, path: string, body?: unknown, raw?: Buffer) => {
      const headers: Record<string, string> = { authorization: `Bearer ${admin}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (raw !== undefined) headers['content-type'] = 'application/octet-stream';
      const res = await fetch(`${base}${path}`, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const upload = async (bundle: string, version: string) => {
      const { signature } = JSON.parse(readFileSync(`${bundle}.sig.json`, 'utf8')) as { signature: string };
      const r = await api('PUT', `/fleet/releases/${version}/${arch}?signature=${encodeURIComponent(signature)}`, undefined, readFileSync(bundle));
      expect(r.status, JSON.stringify(r.json)).toBe(200);
    };
    const rollout = async (id: number) =>
      (await api('GET', `/fleet/rollouts/${id}`)).json as { stage: string; agents: Array<{ agent_id: string; state: string; detail: string }> };
    const stateOf = async (id: number, agent: string) => (await rollout(id)).agents.find((a) => a.agent_id === agent)?.state;
    // The board file as enrolment leaves it: the service, its key, the fleet with the pinned release key.
    const doc = parseDocument(readFileSync(config, 'utf8'));
    doc.setIn(['service'], doc.createNode({ baseUrl: base, apiKeyFile: join(tmp.path, 'fleet-agent.key'), timeoutSeconds: 5 }));
    doc.setIn(['fleet'], doc.createNode({ servicePublicKeyFile: join(keys, 'identity.pub'), releasePublicKeyFile: join(keys, 'release.pub'), pollSeconds: 1 }));
    writeFileSync(config, doc.toString());
    const request = join(dataDir, 'fleet/update-request.json');
    // What door-agent-update.path starts: door-agent-update.service, `update apply --request` as root.
    const pathUnit = () =>
      spawnRun(WRAPPER, ['update', 'apply', '--request', request, '--root', TR, '--config', config], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    try {
      const daemon = new Daemon(config, { entry: WRAPPER });
      daemons.push(daemon);
      await daemon.waitForMessage('door-agent ready', 60_000);
      expect(readLevel(relay)).toBe('0');

      // A good build: offered to the canary, downloaded and handed over by the daemon, installed by root, healthy.
      const good = bump(versionOf(APP), 10);
      const goodBundle = await bundleOf(programAs(good));
      sign(goodBundle);
      await upload(goodBundle, good);
      const first = await api('POST', '/fleet/rollouts', { version: good, canary: agentId, share_percent: 50, health_bound_seconds: 120 });
      expect(first.status, JSON.stringify(first.json)).toBe(200);
      const firstId = Number(first.json.rollout_id);
      await waitUntil(() => existsSync(request), 120_000, 'the daemon handed the offered update over (update-request.json)');
      const { result: installed, levels } = await relayDuring(pathUnit());
      expect(installed.status, installed.stdout + installed.stderr).toBe(0);
      expect(levels).toEqual(['0']);
      expect(existsSync(request)).toBe(false);
      expect(agent('--version').stdout.trim()).toBe(good);
      await waitUntil(async () => (await stateOf(firstId, agentId)) === 'healthy', 60_000, 'the new version reported healthy to the service');
      // The canary healthy: the next stage is offered (the second agent), then the operator stops the rollout.
      await waitUntil(async () => (await rollout(firstId)).stage === 'share', 30_000, 'the share stage once the canary is healthy');
      expect((await api('POST', `/fleet/rollouts/${firstId}/stop`, { reason: 'the second door is a test row' })).status).toBe(200);

      // A build that fails to start: rolled back by itself, reported, the rollout stopped at its canary.
      const failing = bump(good, 1);
      const badBundle = await bundleOf(programAs(failing, (write) => write('dist/cli/door-agent.js', "throw new Error('this build does not start');\n")));
      sign(badBundle);
      await upload(badBundle, failing);
      const second = await api('POST', '/fleet/rollouts', { version: failing, canary: agentId, share_percent: 50, health_bound_seconds: 60 });
      expect(second.status, JSON.stringify(second.json)).toBe(200);
      const secondId = Number(second.json.rollout_id);
      await waitUntil(() => existsSync(request), 120_000, 'the daemon handed the failing update over');
      const { result: rolledBack, levels: during } = await relayDuring(pathUnit());
      expect(rolledBack.status, rolledBack.stdout + rolledBack.stderr).toBe(1);
      expect(during).toEqual(['0']);
      expect(agent('--version').stdout.trim()).toBe(good);
      await waitUntil(async () => (await rollout(secondId)).stage === 'stopped', 60_000, 'the rollout stopped at the canary that rolled back');
      expect(await stateOf(secondId, agentId)).toBe('rolled_back');
      expect(await stateOf(secondId, 'zz-second-door')).toBe('waiting');
    } finally {
      const pid = existsSync(join(dataDir, 'daemon.pid')) ? daemonPid() : 0;
      if (pid > 0 && alive(pid)) {
        process.kill(pid, 'SIGTERM');
        await waitUntil(() => !existsSync(join(dataDir, 'daemon.pid')), 30_000, 'the daemon stopped');
      }
      await service.stop();
    }
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
    for (const gone of [
      'opt/door-agent',
      'opt/door-agent.prev',
      'usr/local/bin/door-agent',
      'etc/systemd/system/door-agent.service',
      'etc/systemd/system/door-agent-update.path',
      'etc/systemd/system/door-agent-update.service',
    ]) {
      expect(existsSync(join(TR, gone)), gone).toBe(false);
    }
    expect(readFileSync(join(TR, 'etc/door-agent/config.yaml'), 'utf8')).toBe('# edited by the installer on the ladder\n');
    r = await install('--uninstall', '--purge');
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(TR, 'etc/door-agent'))).toBe(false);
    expect(existsSync(join(TR, 'var/cache/door-agent'))).toBe(false);
  });
});
