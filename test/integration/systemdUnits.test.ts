import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';

const UNITS = ['door-agent.service', 'door-agent-service.service'];
const unitText = (name: string) => readFileSync(join(ROOT, 'systemd', name), 'utf8');

/** The values of every `Key=` line of a unit (dependency keys may repeat and hold several units each). */
function values(text: string, key: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${key}=`))
    .flatMap((line) => line.slice(key.length + 1).split(/\s+/))
    .filter(Boolean);
}

describe('systemd units', () => {
  it('pass systemd-analyze verify (with /usr/local/bin/door-agent present, in a private mount namespace)', () => {
    const units = UNITS.map((u) => join(ROOT, 'systemd', u)).join(' ');
    const script = `mount --make-rprivate / && mount -t tmpfs x /usr/local/bin && printf '#!/bin/sh\\n' > /usr/local/bin/door-agent && chmod +x /usr/local/bin/door-agent && systemd-analyze verify ${units}`;
    const r = spawnSync('unshare', ['-m', 'sh', '-c', script], { encoding: 'utf8' });
    if (r.error) throw new Error(`needs unshare (util-linux) and systemd-analyze (systemd): ${r.error.message}`);
    if (r.status !== 0 && /unshare|mount/.test(r.stderr) && !r.stderr.includes('.service')) {
      throw new Error(`systemd-analyze verify runs in a private mount namespace (unshare -m, needs root, as CI runs): ${r.stderr}`);
    }
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const unit = unitText('door-agent.service');
    for (const line of [
      'RestartPreventExitStatus=78',
      'Restart=always',
      'SupplementaryGroups=gpio dialout input',
      'DeviceAllow=char-gpiochip rw',
      'DeviceAllow=char-input r',
      'ProtectSystem=strict',
      'StateDirectory=door-agent',
    ]) {
      expect(unit).toContain(line);
    }
  });

  it("caps each daemon's V8 heap well inside its unit's MemoryMax (V8 sizes it from the machine, not the unit)", () => {
    const megabytes = (v: string) => Number(/^(\d+)([MG])$/.exec(v)?.[1]) * (v.endsWith('G') ? 1024 : 1);
    for (const name of UNITS) {
      const unit = unitText(name);
      const memoryMax = megabytes(values(unit, 'MemoryMax')[0] ?? '');
      const heap = Number(/^Environment=NODE_OPTIONS=--max-old-space-size=(\d+)$/m.exec(unit)?.[1]);
      expect(memoryMax, `${name}: MemoryMax`).toBeGreaterThan(0);
      expect(heap, `${name}: NODE_OPTIONS=--max-old-space-size`).toBeGreaterThan(0);
      // Room beside the heap for what V8 does not count: buffers (stored answers, SQLite's pages), code, the stacks.
      expect(heap, name).toBeLessThanOrEqual(memoryMax * 0.65);
    }
  });

  it('door-agent.service neither waits for nor pulls in the time sync (an offline door must not stall the system timers)', () => {
    const unit = unitText('door-agent.service');
    const dependencies = ['Wants', 'Requires', 'Requisite', 'BindsTo', 'PartOf', 'Upholds', 'After', 'Before'].flatMap((key) =>
      values(unit, key).map((v) => `${key}=${v}`),
    );
    expect(dependencies.length).toBeGreaterThan(0);
    expect(dependencies.filter((d) => /time-sync\.target|systemd-time-wait-sync/.test(d))).toEqual([]);
  });
});
