import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claimDemoDir, DEMO_MARKER } from '../../src/demo/demoDir.js';
import { runCli, tempDir } from '../support/cli.js';

// `door-agent demo --dir D` empties D at start: only when D is the demo's own (absent, empty or marked) and no
// running demo uses it. Nothing of a person's is ever removed.
const tmp = tempDir('door-agent-demo-dir-');
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = () => join(tmp.path, `d${++n}`);
const marker = (dir: string) => JSON.parse(readFileSync(join(dir, DEMO_MARKER), 'utf8')) as { writtenBy: string; pid: number; processStart: string | null };
const NOW = new Date('2026-11-25T02:00:00Z');

describe("door-agent demo --dir on a directory that is not the demo's", () => {
  it('refuses a non-empty directory without the marker, names it, and touches nothing', () => {
    const dir = fresh();
    mkdirSync(join(dir, 'photos'), { recursive: true });
    writeFileSync(join(dir, 'thesis.txt'), 'four years of work');
    writeFileSync(join(dir, 'photos', 'a.jpg'), 'jpeg');
    const r = runCli(['demo', '--dir', dir]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${dir} is not empty and was not made by the demo (it has no ${DEMO_MARKER} file)`);
    expect(r.stderr).toContain('nothing was touched');
    expect(r.stderr).toContain('--dir <new or empty directory>');
    expect(r.stderr).not.toContain('earlier demo');
    expect(r.stdout).toBe('');
    expect(readdirSync(dir).sort()).toEqual(['photos', 'thesis.txt']);
    expect(readFileSync(join(dir, 'thesis.txt'), 'utf8')).toBe('four years of work');
    expect(readFileSync(join(dir, 'photos', 'a.jpg'), 'utf8')).toBe('jpeg');
  });

  it("names the way out for an earlier demo's directory (no marker yet), still touching nothing", () => {
    const dir = fresh();
    mkdirSync(join(dir, 'agent'), { recursive: true });
    writeFileSync(join(dir, 'demo.log'), '');
    expect(() => claimDemoDir(dir, NOW)).toThrow(`If it is an earlier demo's directory, remove it yourself (rm -r ${dir}) and start again.`);
    expect(readdirSync(dir).sort()).toEqual(['agent', 'demo.log']);
  });

  it('refuses a path that is a file', () => {
    const file = join(tmp.path, 'notes');
    writeFileSync(file, 'keep me');
    const r = runCli(['demo', '--dir', file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${file} exists and is not a directory; nothing was touched`);
    expect(readFileSync(file, 'utf8')).toBe('keep me');
  });
});

describe('claimDemoDir', () => {
  it("creates an absent directory and marks it as the demo's, with this process", () => {
    const dir = join(fresh(), 'nested');
    claimDemoDir(dir, NOW);
    expect(readdirSync(dir)).toEqual([DEMO_MARKER]);
    expect(marker(dir)).toMatchObject({ writtenBy: 'door-agent demo', pid: process.pid, startedAt: NOW.toISOString() });
  });

  it('takes an empty directory a person made, and keeps the directory itself at the next reset', () => {
    const dir = fresh();
    mkdirSync(dir);
    claimDemoDir(dir, NOW);
    writeFileSync(join(dir, 'demo.log'), 'x');
    claimDemoDir(dir, NOW);
    expect(readdirSync(dir)).toEqual([DEMO_MARKER]);
  });

  it('resets a directory a demo left (its process gone), and only then', () => {
    const dir = fresh();
    claimDemoDir(dir, NOW);
    mkdirSync(join(dir, 'agent'));
    writeFileSync(join(dir, 'agent', 'cache.db'), 'old');
    const gone = spawnSync('true').pid!;
    writeFileSync(join(dir, DEMO_MARKER), JSON.stringify({ ...marker(dir), pid: gone, processStart: null }));
    claimDemoDir(dir, NOW);
    expect(readdirSync(dir)).toEqual([DEMO_MARKER]);
    expect(marker(dir).pid).toBe(process.pid);
  });

  it('refuses a directory whose demo still runs, naming its pid, and leaves it whole', async () => {
    const dir = fresh();
    claimDemoDir(dir, NOW);
    writeFileSync(join(dir, 'demo.log'), 'running');
    const running = spawn('sleep', ['60']);
    try {
      await new Promise((r) => running.once('spawn', r));
      const start = readFileSync(`/proc/${running.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;
      writeFileSync(join(dir, DEMO_MARKER), JSON.stringify({ ...marker(dir), pid: running.pid, processStart: start }));
      expect(() => claimDemoDir(dir, NOW)).toThrow(`${dir} is in use by a running demo (pid ${running.pid}`);
      expect(readFileSync(join(dir, 'demo.log'), 'utf8')).toBe('running');
      expect(marker(dir).pid).toBe(running.pid);

      // The same pid in a marker from another process lifetime (a reused pid) is not a running demo.
      writeFileSync(join(dir, DEMO_MARKER), JSON.stringify({ ...marker(dir), processStart: '1' }));
      claimDemoDir(dir, NOW);
      expect(existsSync(join(dir, 'demo.log'))).toBe(false);
    } finally {
      running.kill();
    }
  });

  it("takes a marker cut short (unreadable) as the demo's own, naming no running demo", () => {
    const dir = fresh();
    mkdirSync(dir);
    writeFileSync(join(dir, DEMO_MARKER), '{"writtenBy":"door-');
    writeFileSync(join(dir, 'demo.log'), 'x');
    claimDemoDir(dir, NOW);
    expect(readdirSync(dir)).toEqual([DEMO_MARKER]);
  });
});
