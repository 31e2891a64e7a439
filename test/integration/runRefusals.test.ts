import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, runCli, tempDir, writeConfig } from '../support/cli.js';

// `door-agent run` refusing to start (issue 24, item 6): an invalid configuration, a data directory it cannot
// write. Either way every relay it can read is driven locked first, and it exits 78, which the unit's
// RestartPreventExitStatus=78 does not restart. Simulated GPIO; the relay is left energized beforehand.

const tmp = tempDir('door-agent-refusals-');
afterAll(tmp.cleanup);
chmodSync(tmp.path, 0o755); // the EACCES case runs the daemon as nobody, who must reach the GPIO files below

let n = 0;
function site(options: Parameters<typeof writeConfig>[1] = {}) {
  const dir = join(tmp.path, `r${n++}`);
  mkdirSync(join(dir, 'gpio/gpio17'), { recursive: true });
  const relay = join(dir, 'gpio/gpio17/value');
  writeFileSync(relay, '1\n'); // energized (unlocked), as a crashed daemon may leave it
  return { dir, config: writeConfig(dir, { id: 'refuse', ...options }), dataDir: join(dir, 'data'), relay };
}

/** `door-agent run`, optionally under a wrapper (unshare, setpriv); it is expected to exit on its own. */
function run(config: string, wrapper: string[] = []) {
  const [program, ...args] = [...wrapper, process.execPath, CLI, 'run', '--config', config];
  const r = spawnSync(program!, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const asRoot = process.getuid?.() === 0;

describe('door-agent run with an invalid configuration', () => {
  it('drives the configured relay locked, then exits 78 naming the problem', () => {
    const s = site({ extra: 'mqtt: { url: "http://broker.lan:1883" }' });
    const r = run(s.config);
    expect(r.status, r.stderr).toBe(78);
    expect(r.stderr).toContain('mqtt.url: must be an mqtt://, mqtts://, ws:// or wss:// URL');
    expect(r.stderr).toContain('driven locked anyway: 1 locked');
    expect(r.stdout).toContain('Front door (doors[0]): relay GPIO 17 set to 0 (locked)');
    expect(readFileSync(s.relay, 'utf8')).toBe('0\n');
  }, 90_000);

  it('an unreadable gpio section: no relay is driven (a guessed driver could move another line), and it says so', () => {
    const s = site();
    writeFileSync(s.config, readFileSync(s.config, 'utf8').replace('driver: simulated', 'driver: simulatd'));
    const r = run(s.config);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('the gpio section cannot be read, so no relay is driven');
    expect(r.stderr).toContain('0 locked');
    expect(readFileSync(s.relay, 'utf8')).toBe('1\n');
  }, 90_000);
});

describe('door-agent run on a data directory it cannot write', () => {
  function expectRefused(r: ReturnType<typeof run>, dataDir: string, code: string, relay: string) {
    expect(r.status, r.stdout + r.stderr).toBe(78);
    const lines = r.stderr.split('\n').filter((l) => l.includes('not writable'));
    expect(lines).toHaveLength(1); // said once
    expect(lines[0]).toContain(`the data directory ${dataDir} is not writable by user `);
    expect(lines[0]).toContain(`(${code})`);
    expect(lines[0]).toContain('every relay was driven locked');
    expect(readFileSync(relay, 'utf8')).toBe('0\n');
  }

  it('a read-only file system (EROFS): one message with the path, relays locked, exit 78', () => {
    const s = site();
    mkdirSync(s.dataDir);
    // A read-only bind mount of the data directory in a mount namespace of the daemon's own (as root; an
    // unprivileged user gets one through a user namespace, -r).
    const wrapper = ['unshare', ...(asRoot ? [] : ['-r']), '-m', 'sh', '-c', `mount --bind -o ro "$0" "$0" && exec "$@"`, s.dataDir];
    expectRefused(run(s.config, wrapper), s.dataDir, 'EROFS', s.relay);
  }, 90_000);

  it('permission denied (EACCES): one message naming the path and the user, relays locked, exit 78', () => {
    const s = site();
    mkdirSync(s.dataDir, { mode: 0o755 });
    chmodSync(s.dataDir, 0o555);
    let wrapper: string[] = [];
    if (asRoot) {
      // root writes anywhere: the daemon runs as nobody, who may write the simulated GPIO but not the data directory.
      chownSync(join(s.dir, 'gpio'), 65534, 65534);
      chownSync(join(s.dir, 'gpio/gpio17'), 65534, 65534);
      chownSync(s.relay, 65534, 65534);
      wrapper = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
    }
    expectRefused(run(s.config, wrapper), s.dataDir, 'EACCES', s.relay);
  }, 90_000);

  it('a cache left by another user (an import run as root) is named, before anything is half written', () => {
    const s = site();
    expect(runCli(['import', 'examples/snapshot.json', '--config', s.config]).status).toBe(0);
    let wrapper: string[] = [];
    if (asRoot) {
      // The import ran as root (its files are root's, 0600); the daemon runs as nobody, who owns the directory.
      for (const path of [s.dataDir, join(s.dir, 'gpio'), join(s.dir, 'gpio/gpio17'), s.relay]) chownSync(path, 65534, 65534);
      wrapper = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
    } else {
      chmodSync(join(s.dataDir, 'cache.db'), 0o444);
    }
    expectRefused(run(s.config, wrapper), s.dataDir, `EACCES on ${join(s.dataDir, 'cache.db')}`, s.relay);
  }, 90_000); // an import and a daemon start: room for a loaded machine
});
