import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../support/cli.js';

// npm start's build step (scripts/build-if-stale.mjs): a second start with nothing changed builds nothing; a source
// newer than the last build, or no build at all, builds. A copy of the script in a small tree of real files with
// set modification times; its `npm run build` writes the outputs a real build does and counts its runs.
const tmp = tempDir('door-agent-build-if-stale-');
const tree = tmp.path;
afterAll(() => tmp.cleanup());

const at = (path: string, seconds: number) => utimesSync(join(tree, path), seconds, seconds);
function write(path: string, text: string, seconds: number) {
  mkdirSync(dirname(join(tree, path)), { recursive: true });
  writeFileSync(join(tree, path), text);
  at(path, seconds);
}
const builds = () => (existsSync(join(tree, 'builds')) ? readFileSync(join(tree, 'builds'), 'utf8').length : 0);

/** Runs the script as npm start does; its one line, and whether it built. */
function start(): { line: string; built: boolean } {
  const before = builds();
  const r = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: tree, encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  return { line: r.stdout.trim(), built: builds() > before };
}

/** A build as `npm run build` makes one: tsc's dist/src, then the bundle dist/cli/door-agent.js, written now. */
const BUILD = [
  "const fs = require('node:fs');",
  "fs.mkdirSync('dist/src', { recursive: true }); fs.writeFileSync('dist/src/cli.js', '');",
  "fs.mkdirSync('dist/cli', { recursive: true }); fs.writeFileSync('dist/cli/door-agent.js', '');",
  "fs.appendFileSync('builds', 'x');",
].join(' ');

/** The sources' time, in seconds: a day ago (a build writes its outputs now). */
const T = Math.floor(Date.now() / 1000) - 86_400;

beforeAll(() => {
  write('scripts/build-if-stale.mjs', readFileSync(join(ROOT, 'scripts/build-if-stale.mjs'), 'utf8'), T);
  write('package.json', JSON.stringify({ name: 'tree', private: true, scripts: { build: `node -e "${BUILD}"` } }), T);
  write('package-lock.json', '{}', T);
  write('tsconfig.json', '{}', T);
  write('scripts/bundle.mjs', '', T);
  write('src/cli.ts', '', T);
  write('src/door/door.ts', '', T);
  write('bench/run.ts', '', T);
  write('native/sd_notify.c', '', T);
});

describe('npm start builds only what changed (scripts/build-if-stale.mjs)', () => {
  it('builds when there is no build yet, and says why', () => {
    const first = start();
    expect(first.line).toContain('dist/cli/door-agent.js is missing (no build yet); building (npm run build)');
    expect(first.built).toBe(true);
  });

  it('skips the build when every source is older than the last build', () => {
    at('dist/cli/door-agent.js', T + 60);
    expect(start()).toEqual({
      line: 'build: nothing changed since the last build (dist/cli/door-agent.js); skipped (npm run build builds anyway)',
      built: false,
    });
  });

  it('builds when a source is newer than the last build, naming it', () => {
    // (Each build is an `npm run build`, seconds on a loaded machine: a source under src/ and one at the top, not every kind.)
    for (const [source, later] of [
      ['src/door/door.ts', 1],
      ['package-lock.json', 2],
    ] as const) {
      at('dist/cli/door-agent.js', T + 60);
      at(source, T + 60 + later);
      const run = start();
      expect(run.line, source).toBe(`build: ${source} changed since the last build; building (npm run build)...`);
      expect(run.built, source).toBe(true);
    }
    // Built now: the next start skips.
    expect(start().built).toBe(false);
  });

  it("takes no notice of what is no source: run data in dot-directories, editors' files", () => {
    at('dist/cli/door-agent.js', T + 300);
    write('bench/.work/postgres/data/base', '', T + 600);
    write('bench/results.json', '{}', T + 600);
    write('src/door/.door.ts.swp', '', T + 600);
    expect(start().built).toBe(false);
  });

  it('builds when what npm start runs (dist/src/cli.js) is gone, whatever the stamp', () => {
    at('dist/cli/door-agent.js', T + 3600);
    rmSync(join(tree, 'dist/src/cli.js'));
    const run = start();
    expect(run.line).toContain('dist/src/cli.js is missing');
    expect(run.built).toBe(true);
  });
});
