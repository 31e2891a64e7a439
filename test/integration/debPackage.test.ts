import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { cleanCopy } from '../support/cleanCopy.js';
import { ROOT, runCli, tempDir } from '../support/cli.js';
import { DebianRoot } from '../support/debianRoot.js';
import { type Run, spawnRun } from '../support/process.js';

// npm run package from a clean copy (npm ci with the native builds, lintian), and beside it a fresh Debian root
// (debootstrap) with Node.js: minutes on a loaded machine. Then the package is installed there with apt, as on
// another board of this architecture, and run.
vi.setConfig({ testTimeout: 45 * 60_000, hookTimeout: 120_000 });

const tmp = tempDir('door-agent-deb-');
const SRC = join(tmp.path, 'src'); // the clean copy npm run package runs in
const BOARD = join(tmp.path, 'board'); // the fresh Debian root: the other board
const CACHE = join(ROOT, '.cache/debian-root'); // debootstrap's tarball, apt's lists and downloads (gitignored)
afterAll(() => {
  // The root's mounts lived in mount namespaces that are gone; never follow a mount point anyway.
  spawnSync('rm', ['-rf', '--one-file-system', tmp.path]);
});

const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const arch = spawnSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).stdout.trim();
const debName = `door-agent_${version}_${arch}.deb`;
const board = (p: string) => join(BOARD, p);
const mode = (p: string) => (statSync(board(p)).mode & 0o777).toString(8);

/** The tools a package built elsewhere must not need on the board. */
const BUILD_TOOLS = ['cc', 'gcc', 'g++', 'c++', 'make', 'npm', 'npx', 'node-gyp'];
const buildToolsOnBoard = (root: DebianRoot) => root.run(`for t in ${BUILD_TOOLS.join(' ')}; do command -v $t || true; done`);

/**
 * The board: a fresh Debian root with the Node.js this machine runs, from its Debian package (dpkg-repack) as
 * NodeSource ships it, less npm (path-exclude): Debian's own nodejs has no npm, and the package must not need it.
 */
async function prepareBoard(): Promise<DebianRoot> {
  const started = performance.now();
  const root = await DebianRoot.create(BOARD, CACHE);
  const pkg = spawnSync('dpkg-query', ['-S', spawnSync('sh', ['-c', 'readlink -f "$(command -v node)"'], { encoding: 'utf8' }).stdout.trim()], {
    encoding: 'utf8',
  });
  if (pkg.status !== 0)
    throw new Error(`this machine's node is not from a Debian package (dpkg-query -S: ${pkg.stderr.trim()}): the board gets Node.js as a package`);
  const nodePackage = pkg.stdout.split(':')[0]!.trim();
  const repacked = await spawnRun('dpkg-repack', ['--deb-option=-Znone', nodePackage], { cwd: board('tmp') });
  if (repacked.status !== 0) throw new Error(`dpkg-repack ${nodePackage} (sudo apt-get install -y dpkg-repack): ${repacked.stdout}${repacked.stderr}`);
  writeFileSync(
    board('etc/dpkg/dpkg.cfg.d/no-npm'),
    ['/usr/lib/node_modules/npm/*', '/usr/bin/npm', '/usr/bin/npx', '/usr/lib/node_modules/corepack/*', '/usr/bin/corepack', '/usr/include/node/*']
      .map((p) => `path-exclude=${p}\n`)
      .join(''),
  );
  const node = await root.run(`apt-get update -qq && apt-get install -y -qq /tmp/${nodePackage}_*.deb && rm /tmp/${nodePackage}_*.deb && node --version`);
  if (node.status !== 0) throw new Error(`installing ${nodePackage} on the board failed:\n${node.stdout.slice(-3000)}${node.stderr}`);
  console.log(`the board (debootstrap, ${nodePackage} without npm): ${Math.round((performance.now() - started) / 1000)} s`);
  return root;
}

const expectOk = (r: Run) => expect(r.status, r.stdout + r.stderr).toBe(0);

describe('npm run package: a Debian package that installs with apt on a board without a compiler or npm', () => {
  let root: DebianRoot;
  let install: Run;

  it('builds door-agent_<version>_<arch>.deb from a clean copy of the tree, and lintian finds no error in it', async () => {
    if (spawnSync('sh', ['-c', 'command -v lintian']).status !== 0)
      throw new Error('the package test runs lintian: sudo apt-get install -y lintian (npm test installs it as root)');
    cleanCopy(SRC);
    expect(existsSync(join(SRC, 'node_modules')) || existsSync(join(SRC, 'dist'))).toBe(false);
    // The board is made while the package builds.
    const boardReady = prepareBoard().then(
      (r) => r,
      (err: unknown) => err as Error,
    );
    // At a low priority: minutes of compiling beside the rest of the suite, whose timed tests (and the sync's
    // thread at nice +10) must not be starved by it.
    const built = await spawnRun('nice', ['-n', '15', 'npm', 'run', 'package'], { cwd: SRC });
    console.log(`npm run package (npm ci + native builds + build + prune + lintian, from a clean copy): ${built.seconds} s`);
    expectOk(built);
    expect(built.stdout).toContain(`built ${join(SRC, 'dist-deb', debName)}`);
    expect(built.stdout).toContain('lintian: no errors');
    expect(built.stdout).not.toMatch(/^E: /m);

    const deb = join(SRC, 'dist-deb', debName);
    const field = (name: string) => spawnSync('dpkg-deb', ['-f', deb, name], { encoding: 'utf8' }).stdout.trim();
    expect(field('Package')).toBe('door-agent');
    expect(field('Version')).toBe(version);
    expect(field('Architecture')).toBe(arch);
    const major = process.versions.node.split('.')[0];
    expect(field('Depends')).toContain(`nodejs (<< ${Number(major) + 1})`);
    expect(field('Depends')).toMatch(/nodejs \(>= 2\d/);
    expect(field('Depends')).not.toMatch(/\b(npm|gcc|g\+\+|make|build-essential|python3|node-gyp)\b/);

    const files = spawnSync('dpkg-deb', ['-c', deb], { encoding: 'utf8', maxBuffer: 64 << 20 }).stdout;
    const has = (p: string) => new RegExp(` \\./${p.replace(/[.+]/g, '\\$&')}(/|$)`, 'm').test(files);
    for (const p of [
      'usr/bin/door-agent',
      'usr/lib/door-agent/dist/cli/door-agent.js',
      'usr/lib/door-agent/dist/cli/syncWorker.js',
      'usr/lib/door-agent/build/Release/gpio_chardev.node',
      'usr/lib/door-agent/build/Release/sd_notify.node',
      'usr/lib/door-agent/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      'usr/lib/door-agent/config/door-agent.example.yaml',
      'usr/lib/door-agent/examples/snapshot.json',
      'usr/lib/door-agent/scripts/hw-selftest.sh',
      'lib/systemd/system/door-agent.service',
      'lib/systemd/system/door-agent-service.service',
      'lib/systemd/system/door-agent-update.path',
      'lib/systemd/system/door-agent-update.service',
      'usr/share/doc/door-agent/README.md',
      'usr/share/doc/door-agent/copyright',
      'usr/share/lintian/overrides/door-agent',
    ]) {
      expect(has(p), p).toBe(true);
    }
    if (existsSync(join(ROOT, 'schema/config.schema.json'))) expect(has('usr/lib/door-agent/schema/config.schema.json')).toBe(true);
    // Only what runs on this architecture: no dev tools, no sources, no addons prebuilt for other systems.
    for (const p of [
      'usr/lib/door-agent/node_modules/typescript',
      'usr/lib/door-agent/node_modules/vitest',
      'usr/lib/door-agent/src',
      'usr/lib/door-agent/dist/src',
    ]) {
      expect(has(p), p).toBe(false);
    }
    expect(files).not.toMatch(/prebuilds\/(win32|darwin|android)/);
    expect(files).not.toContain('/usr/local/');

    root = await boardReady.then((r) => {
      if (r instanceof Error) throw r;
      return r;
    });
    copyFileSync(deb, board(`tmp/${debName}`));
  });

  it('npm run release in the same copy reuses its build (no second npm ci): a bundle that release sign and verify accept, a flipped byte refused', async () => {
    const built = await spawnRun('nice', ['-n', '15', 'npm', 'run', 'release'], { cwd: SRC });
    console.log(`npm run release (after npm run package: its npm ci reused): ${built.seconds} s`);
    expectOk(built);
    expect(built.stdout).toContain('reusing its node_modules and addons (no npm ci');
    expect(built.stdout).not.toContain('npm ci with the dev tools');
    const bundle = join(SRC, 'dist-release', `door-agent-${version}-${arch}.tar.gz`);
    expect(built.stdout).toContain(`built ${bundle}`);
    const release = spawnSync('tar', ['-xzOf', bundle, 'RELEASE.json'], { encoding: 'utf8' });
    expect(JSON.parse(release.stdout)).toEqual({ version, arch, node_abi: process.versions.modules });
    const listed = spawnSync('tar', ['-tzf', bundle], { encoding: 'utf8', maxBuffer: 64 << 20 }).stdout.split('\n');
    expect(listed[0]).toBe('RELEASE.json');
    for (const p of ['./dist/cli/door-agent.js', './node_modules/better-sqlite3/build/Release/better_sqlite3.node', './build/Release/gpio_chardev.node']) {
      expect(listed, p).toContain(p);
    }
    expect(listed.some((p) => p.startsWith('./src/') || p.startsWith('./node_modules/typescript/'))).toBe(false);

    const keys = join(tmp.path, 'keys');
    const made = runCli(['service', 'fleet-keys', '--out', keys]);
    expect(made.status, made.stderr).toBe(0);
    const signed = runCli(['release', 'sign', '--key', join(keys, 'release.key'), bundle]);
    expect(signed.status, signed.stderr).toBe(0);
    const verified = runCli(['release', 'verify', '--key', join(keys, 'release.pub'), bundle]);
    expect(verified.stdout).toBe(`${bundle}: version ${version} for ${arch}, signed by the release key: good\n`);
    expect(verified.status).toBe(0);
    const flipped = join(tmp.path, 'flipped.tar.gz');
    const bytes = readFileSync(bundle);
    bytes[bytes.length >> 1]! ^= 0x20;
    writeFileSync(flipped, bytes);
    const refused = runCli(['release', 'verify', '--key', join(keys, 'release.pub'), '--signature', `${bundle}.sig.json`, flipped]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/refused: the SHA-256 of .*flipped\.tar\.gz is [0-9a-f]{64}, not the [0-9a-f]{64} signed/);
  });

  it('apt install ./door-agent_*.deb on the board: the user, directories and configuration as install.sh makes them, the unit enabled, nothing compiled', async () => {
    expect((await buildToolsOnBoard(root)).stdout.trim()).toBe('');
    install = await root.run(`cd /tmp && apt install -y ./${debName}`);
    expectOk(install);
    expect((await buildToolsOnBoard(root)).stdout.trim()).toBe(''); // apt brought neither compiler nor npm
    expect(install.stdout).toContain('created the system user door-agent');
    expect(install.stdout).toContain('wrote /etc/door-agent/config.yaml from the example');
    expect(install.stdout).toContain('enabled door-agent.service');

    const ids = await root.run('id door-agent');
    for (const group of ['door-agent', 'gpio', 'dialout', 'input']) expect(ids.stdout).toContain(`(${group})`);
    // The example, its first line naming the package's JSON Schema (docs/config-schema.md).
    const example = readFileSync(join(ROOT, 'config/door-agent.example.yaml'), 'utf8');
    const schema = '/usr/lib/door-agent/schema/config.schema.json';
    expect(readFileSync(board('etc/door-agent/config.yaml'), 'utf8')).toBe(example.replace('$schema=../schema/config.schema.json', `$schema=${schema}`));
    expect(mode('etc/door-agent/config.yaml')).toBe('640');
    expect(mode('etc/door-agent')).toBe('750');
    expect(mode('var/lib/door-agent')).toBe('750');
    const owners = await root.run('stat -c "%n %U:%G" /etc/door-agent /etc/door-agent/config.yaml /var/lib/door-agent /var/lib/door-agent-service');
    expect(owners.stdout.trim().split('\n')).toEqual([
      '/etc/door-agent root:door-agent',
      '/etc/door-agent/config.yaml root:door-agent',
      '/var/lib/door-agent door-agent:door-agent',
      '/var/lib/door-agent-service door-agent:door-agent',
    ]);
    // Enabled for the next boot, not started (the example is not this door's configuration yet).
    const wants = board('etc/systemd/system/multi-user.target.wants/door-agent.service');
    expect(lstatSync(wants).isSymbolicLink()).toBe(true);
    expect(readlinkSync(wants)).toBe('/lib/systemd/system/door-agent.service');
    expect(existsSync(board('etc/systemd/system/multi-user.target.wants/door-agent-service.service'))).toBe(false);
    const unit = readFileSync(board('lib/systemd/system/door-agent.service'), 'utf8');
    expect(unit).toContain('ExecStart=/usr/bin/door-agent run');
    expect(unit).toContain('ExecStopPost=/usr/bin/door-agent relock');
  });

  it('the installed door-agent runs there: --version, config check of the shipped example, a granted check', async () => {
    const versionRun = await root.run('door-agent --version');
    expectOk(versionRun);
    expect(versionRun.stdout.trim()).toBe(version);

    const check = await root.run('runuser -u door-agent -- door-agent config check');
    expectOk(check);
    expect(check.stdout).toContain('/etc/door-agent/config.yaml: ok');

    // A small cache: the example snapshot, imported as the service's user would; Alice's card opens the door.
    const imported = await root.run('runuser -u door-agent -- door-agent import /usr/lib/door-agent/examples/snapshot.json');
    expectOk(imported);
    const granted = await root.run('runuser -u door-agent -- door-agent check 0004213578');
    expectOk(granted);
    expect(JSON.parse(granted.stdout)).toMatchObject({ granted: true });
    const denied = await root.run('runuser -u door-agent -- door-agent check 4213579 || echo "exit $?"'); // Bob: suspended
    expect(JSON.parse(denied.stdout.replace(/exit \d+\s*$/, ''))).toMatchObject({ granted: false });
    expect(denied.stdout).toMatch(/exit 1\s*$/);
  });

  it('a reinstall keeps an edited configuration without asking; remove keeps configuration and data; purge removes them and the user', async () => {
    writeFileSync(board('etc/door-agent/config.yaml'), `${readFileSync(board('etc/door-agent/config.yaml'), 'utf8')}# edited on the ladder\n`);
    const edited = readFileSync(board('etc/door-agent/config.yaml'), 'utf8');
    const again = await root.run(`cd /tmp && apt install -y --reinstall ./${debName} </dev/null`);
    expectOk(again);
    expect(again.stdout).toContain('kept the existing /etc/door-agent/config.yaml');
    expect(readFileSync(board('etc/door-agent/config.yaml'), 'utf8')).toBe(edited);

    const removed = await root.run('apt remove -y door-agent');
    expectOk(removed);
    expect(removed.stdout).toContain('kept /etc/door-agent and /var/lib/door-agent');
    for (const gone of ['usr/bin/door-agent', 'usr/lib/door-agent', 'lib/systemd/system/door-agent.service']) expect(existsSync(board(gone)), gone).toBe(false);
    expect(readFileSync(board('etc/door-agent/config.yaml'), 'utf8')).toBe(edited);
    expect(existsSync(board('var/lib/door-agent/cache.db'))).toBe(true);
    expectOk(await root.run('id door-agent'));

    const purged = await root.run('apt purge -y door-agent');
    expectOk(purged);
    for (const gone of [
      'etc/door-agent',
      'var/lib/door-agent',
      'var/lib/door-agent-service',
      'etc/systemd/system/multi-user.target.wants/door-agent.service',
    ]) {
      expect(existsSync(board(gone)), gone).toBe(false);
    }
    expect((await root.run('id door-agent')).status).not.toBe(0);
  });
});
