import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../support/cli.js';

const tmp = tempDir('door-agent-install-');
afterAll(tmp.cleanup);
const install = (...args: string[]) => spawnSync('bash', [join(ROOT, 'scripts/install.sh'), '--root', tmp.path, ...args], { encoding: 'utf8' });
const mode = (p: string) => (statSync(join(tmp.path, p)).mode & 0o777).toString(8);

describe('scripts/install.sh (into a throwaway root)', () => {
  it('installs the program, the wrapper, the units and the config; is idempotent; never overwrites the config; uninstalls', () => {
    let r = install('--no-npm', '--with-service');
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(tmp.path, 'opt/door-agent/dist/src/cli.js'))).toBe(true);
    expect(readFileSync(join(tmp.path, 'usr/local/bin/door-agent'), 'utf8')).toContain('exec node /opt/door-agent/dist/src/cli.js');
    expect(mode('usr/local/bin/door-agent')).toBe('755');
    expect(readFileSync(join(tmp.path, 'etc/systemd/system/door-agent.service'), 'utf8')).toContain('ExecStopPost=/usr/local/bin/door-agent relock');
    expect(existsSync(join(tmp.path, 'etc/systemd/system/door-agent-service.service'))).toBe(true);
    expect(mode('etc/door-agent/service.yaml')).toBe('640'); // the reference service's unit has its config
    expect(mode('etc/door-agent/config.yaml')).toBe('640');
    expect(mode('etc/door-agent')).toBe('750');

    // The installed program runs: its config check passes on the installed example.
    const check = spawnSync(process.execPath, [join(tmp.path, 'opt/door-agent/dist/src/cli.js'), 'config', 'check', '--config', join(tmp.path, 'etc/door-agent/config.yaml')], { encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);

    writeFileSync(join(tmp.path, 'etc/door-agent/config.yaml'), '# edited by the installer on the ladder\n');
    r = install('--no-npm');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('kept the existing');
    expect(readFileSync(join(tmp.path, 'etc/door-agent/config.yaml'), 'utf8')).toBe('# edited by the installer on the ladder\n');

    r = install('--uninstall');
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(tmp.path, 'opt/door-agent'))).toBe(false);
    expect(existsSync(join(tmp.path, 'usr/local/bin/door-agent'))).toBe(false);
    expect(existsSync(join(tmp.path, 'etc/systemd/system/door-agent.service'))).toBe(false);
    expect(existsSync(join(tmp.path, 'etc/door-agent/config.yaml'))).toBe(true);
    r = install('--uninstall', '--purge');
    expect(existsSync(join(tmp.path, 'etc/door-agent'))).toBe(false);
  });

  it('refuses an unknown option', () => {
    const r = install('--colour');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown option --colour');
  });
});

describe('systemd units', () => {
  it('pass systemd-analyze verify (with /usr/local/bin/door-agent present, in a private mount namespace)', () => {
    const units = ['door-agent.service', 'door-agent-service.service'].map((u) => join(ROOT, 'systemd', u)).join(' ');
    const script = `mount --make-rprivate / && mount -t tmpfs x /usr/local/bin && printf '#!/bin/sh\\n' > /usr/local/bin/door-agent && chmod +x /usr/local/bin/door-agent && systemd-analyze verify ${units}`;
    const r = spawnSync('unshare', ['-m', 'sh', '-c', script], { encoding: 'utf8' });
    if (r.error) throw new Error(`needs unshare (util-linux) and systemd-analyze (systemd): ${r.error.message}`);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const unit = readFileSync(join(ROOT, 'systemd/door-agent.service'), 'utf8');
    for (const line of ['RestartPreventExitStatus=78', 'Restart=always', 'SupplementaryGroups=gpio dialout input', 'DeviceAllow=char-gpiochip rw', 'DeviceAllow=char-input r', 'ProtectSystem=strict', 'StateDirectory=door-agent']) {
      expect(unit).toContain(line);
    }
  });
});
