// `npm start`'s build (prestart): runs `npm run build` only when a source is newer than the last successful build,
// or when there is none; otherwise a second start waits for no compiler. Prints one line saying which.
// `npm run build` itself always builds everything.
//
// The stamp is dist/cli/door-agent.js: the bundle is the last thing `npm run build` writes (tsc, then
// scripts/bundle.mjs), and only when tsc succeeded, so a build that failed is built again at the next start.
// The sources are what the build reads: the TypeScript under src/ and bench/ (their dot-directories, such as
// bench/.work, are run data), native/, the tsconfig files, package.json, package-lock.json and scripts/bundle.mjs.
//
//   node scripts/build-if-stale.mjs
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const STAMP = 'dist/cli/door-agent.js';
/** What `npm start` runs: without it there is nothing to start, whatever the stamp says. */
const STARTED = 'dist/src/cli.js';

/** The files under `dir` that `keep` takes, skipping dot-directories. */
function* filesUnder(dir, keep) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if (err.code === 'ENOENT') return;
    throw err;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!entry.name.startsWith('.')) yield* filesUnder(path, keep);
    } else if (keep(entry.name)) yield path;
  }
}

function* sources() {
  const typescript = (name) => name.endsWith('.ts');
  yield* filesUnder(join(root, 'src'), typescript);
  yield* filesUnder(join(root, 'bench'), typescript);
  yield* filesUnder(join(root, 'native'), () => true);
  for (const name of readdirSync(root)) if (/^tsconfig.*\.json$/.test(name)) yield join(root, name);
  for (const name of ['package.json', 'package-lock.json', 'scripts/bundle.mjs']) if (existsSync(join(root, name))) yield join(root, name);
}

/** Why a build is needed, in a few words, or null when the last build is newer than every source. */
function whyBuild() {
  for (const output of [STAMP, STARTED]) if (!existsSync(join(root, output))) return `${output} is missing (no build yet)`;
  const built = statSync(join(root, STAMP)).mtimeMs;
  let newest = null;
  for (const path of sources()) {
    const changed = statSync(path).mtimeMs;
    if (changed > built && (newest === null || changed > newest.changed)) newest = { path, changed };
  }
  return newest === null ? null : `${relative(root, newest.path)} changed since the last build`;
}

const reason = whyBuild();
if (reason === null) {
  console.log(`build: nothing changed since the last build (${STAMP}); skipped (npm run build builds anyway)`);
} else {
  console.log(`build: ${reason}; building (npm run build)...`);
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (build.error) {
    console.error(`build: could not run npm run build: ${build.error.message}`);
    process.exit(1);
  }
  process.exit(build.status ?? 1);
}
