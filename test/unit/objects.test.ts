import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { withProps } from '../../src/core/objects.js';
import { ROOT } from '../support/cli.js';

describe('withProps', () => {
  it('copies the base and adds the extra properties after it, the later winning, as a spread would', () => {
    const base = { a: 1, b: 2 };
    const copy = withProps(base, { b: 3, c: 4 });
    expect(copy).toEqual({ a: 1, b: 3, c: 4 });
    expect(Object.keys(copy)).toEqual(['a', 'b', 'c']);
    expect(base).toEqual({ a: 1, b: 2 }); // the base is left as it was
    expect(copy).not.toBe(base);
  });

  it('gives every copy of one shape the same hidden class, where `{ ...base, c }` makes a new one each time on Node 20', () => {
    // Run in a node of its own with V8's natives: %HaveSameMap tells whether two objects share a hidden class.
    const script = `
      import { withProps } from ${JSON.stringify(join(ROOT, 'dist/src/core/objects.js'))};
      const state = (i) => ({ open: i % 2 === 0, since: i });
      const helper = (i) => withProps(state(i), { failures: i });
      const literal = (i) => ({ ...state(i), failures: i });
      for (let i = 0; i < 5000; i++) { helper(i); literal(i); }
      console.log(JSON.stringify({ helper: %HaveSameMap(helper(1), helper(2)), literal: %HaveSameMap(literal(1), literal(2)) }));
    `;
    const run = spawnSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    const same = JSON.parse(run.stdout) as { helper: boolean; literal: boolean };
    expect(same.helper).toBe(true);
    // What the helper is for. A Node whose V8 records these transitions would say true here: then the helper (and
    // npm run lint:spreads) can go, and this line says so.
    if (process.versions.node.startsWith('20.')) expect(same.literal).toBe(false);
  });
});

describe('npm run lint:spreads', () => {
  let dir = '';
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = '';
  });

  const check = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'scripts/check-spreads.mjs'), ...args], { cwd: dir, encoding: 'utf8' });

  it('fails naming each literal that starts with a spread and goes on, and passes the forms that do not', () => {
    dir = mkdtempSync(join(tmpdir(), 'spreads-'));
    writeFileSync(
      join(dir, 'bad.ts'),
      ['const a = { x: 1 };', 'export const b = { ...a, y: 2 };', 'export const c = {', '  ...a,', '  ...b,', '};', ''].join('\n'),
    );
    writeFileSync(join(dir, 'good.ts'), ['const a = { x: 1 };', 'export const b = { y: 2, ...a };', 'export const c = { ...a };', ''].join('\n'));
    const run = check(dir);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('bad.ts:2: { ...a, y: 2 }');
    expect(run.stderr).toContain('bad.ts:3: { ...a, ...b, }');
    expect(run.stderr).not.toContain('good.ts');
    expect(run.stderr).toContain('withProps');
  });

  it('passes the daemon runtime modules as they are', () => {
    dir = mkdtempSync(join(tmpdir(), 'spreads-'));
    const run = check();
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
