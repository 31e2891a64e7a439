import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel } from '../support/daemon.js';
import { spawnRun } from '../support/process.js';

// The Debian package's prerm (debian/prerm, docs/debian-package.md) as dpkg runs it before an upgrade, without
// systemd: in a mount namespace of its own (`unshare -m`) where /run is a fresh tmpfs holding /run/systemd/system
// (what the script takes for "systemd runs here"), with fake `systemctl` and `deb-systemd-invoke` first on PATH. The
// fakes answer `is-active` from a state file per unit; stopping door-agent.service sends SIGTERM to a real
// `door-agent run` (simulated GPIO, the door unlocked by a command) and waits for it to exit, as systemd would.
// The whole install on a Debian root: debPackage.test.ts (no systemd there, so prerm stops nothing).

const tmp = tempDir('door-agent-prerm-');
const fakeBin = join(tmp.path, 'bin');
const states = join(tmp.path, 'units');
const pidFile = join(tmp.path, 'daemon.pid');
const board = join(tmp.path, 'board');
const relay = join(board, 'gpio/gpio17/value');
let daemon: Daemon | null = null;

/** Each unit's state: 'active' (stops when asked), 'stuck' (stays active), or no file (inactive). */
function setUnit(unit: string, state: 'active' | 'stuck'): void {
  writeFileSync(join(states, unit), `${state}\n`);
}

/**
 * `prerm ACTION` in its own mount namespace; after it, still inside, the file of units to start again is printed
 * after a marker (the namespace's /run goes with it). Run without blocking this process: it reaps the daemon the
 * fake stop waits for.
 */
async function prerm(action: string): Promise<{ status: number; stdout: string; stderr: string; restart: string }> {
  const script = `set -u
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/system
PATH=${fakeBin}:$PATH sh ${join(ROOT, 'debian/prerm')} "$1"
rc=$?
echo '--- restart file'
cat /run/door-agent.dpkg-restart 2>/dev/null
exit $rc
`;
  const r = await spawnRun('unshare', ['-m', 'sh', '-c', script, 'prerm', action]);
  const [stdout = '', restart = ''] = r.stdout.split('--- restart file\n');
  return { status: r.status, stdout, stderr: r.stderr, restart };
}

beforeAll(() => {
  const which = spawnSync('sh', ['-c', 'command -v unshare']);
  if (which.status !== 0) throw new Error('this test needs unshare: apt-get install util-linux');
  mkdirSync(fakeBin);
  mkdirSync(states);
  mkdirSync(board);
  // systemctl is-active --quiet UNIT: active while its state file exists.
  writeFileSync(
    join(fakeBin, 'systemctl'),
    `#!/bin/sh
[ "$1" = is-active ] || { echo "fake systemctl: only is-active is played here, not $*" >&2; exit 2; }
for unit; do :; done
test -f "${states}/$unit"
`,
  );
  // deb-systemd-invoke stop UNIT: door-agent.service's daemon gets SIGTERM and is waited for (20 s at most, as a
  // unit's stop timeout would); a stuck unit stays active.
  writeFileSync(
    join(fakeBin, 'deb-systemd-invoke'),
    `#!/bin/sh
[ "$1" = stop ] || { echo "fake deb-systemd-invoke: only stop is played here, not $*" >&2; exit 2; }
unit=$2
[ -f "${states}/$unit" ] || exit 0
[ "$(cat "${states}/$unit")" = stuck ] && exit 0
if [ "$unit" = door-agent.service ] && [ -f "${pidFile}" ]; then
  pid=$(cat "${pidFile}")
  kill -TERM "$pid"
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
  kill -0 "$pid" 2>/dev/null && exit 1
fi
rm -f "${states}/$unit"
`,
  );
  for (const fake of ['systemctl', 'deb-systemd-invoke']) chmodSync(join(fakeBin, fake), 0o755);
});

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  tmp.cleanup();
});

describe('debian/prerm', () => {
  it('on upgrade stops the running units, the daemon locking the door it held unlocked, and notes them to start again', async () => {
    const config = writeConfig(board, { agent: `controlSocket: ${join(board, 'control.sock')}`, doorExtra: '    unlockSeconds: 600\n' });
    daemon = new Daemon(config);
    await daemon.waitForMessage('door-agent ready', 30_000);
    writeFileSync(pidFile, `${daemon.pid}\n`);
    const unlocked = runCli(['unlock', '--door', 'Front door', '--config', config]);
    expect(unlocked.status, unlocked.stderr).toBe(0);
    expect(readLevel(relay)).toBe('1');
    setUnit('door-agent-update.path', 'active');
    setUnit('door-agent.service', 'active');

    const r = await prerm('upgrade');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('door-agent: stopping door-agent.service (every relay is driven locked as it stops)');
    expect(r.stdout).toContain('door-agent: stopped door-agent.service');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(readLevel(relay)).toBe('0');
    // What postinst starts again after the new version is in place; the unit that was not running is not named.
    expect(r.restart).toBe('door-agent-update.path\ndoor-agent.service\n');
  }, 90_000);

  it('a unit still active after its stop makes it exit 1 naming that unit, and note nothing to start again', async () => {
    setUnit('door-agent.service', 'stuck');
    const r = await prerm('upgrade');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'door-agent prerm: door-agent.service is still running; stop it (systemctl stop door-agent.service locks every relay), then try again',
    );
    expect(r.restart).toBe('');
  });
});
