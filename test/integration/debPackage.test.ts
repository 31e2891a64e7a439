import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
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
const keys = join(tmp.path, 'keys'); // the release key pair, made by the release test
const releaseBundle = join(SRC, 'dist-release', `door-agent-${version}-${arch}.tar.gz`);

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
    const bundle = releaseBundle;
    expect(built.stdout).toContain(`built ${bundle}`);
    expect(built.stdout).toContain(`the program and its Debian package ${debName}`);
    const release = spawnSync('tar', ['-xzOf', bundle, 'RELEASE.json'], { encoding: 'utf8' });
    expect(JSON.parse(release.stdout)).toEqual({ version, arch, node_abi: process.versions.modules });
    const listed = spawnSync('tar', ['-tzf', bundle], { encoding: 'utf8', maxBuffer: 64 << 20 }).stdout.split('\n');
    expect(listed[0]).toBe('RELEASE.json');
    for (const p of ['./dist/cli/door-agent.js', './node_modules/better-sqlite3/build/Release/better_sqlite3.node', './build/Release/gpio_chardev.node']) {
      expect(listed, p).toContain(p);
    }
    expect(listed.some((p) => p.startsWith('./src/') || p.startsWith('./node_modules/typescript/'))).toBe(false);
    // The Debian package of the same program, for the boards installed from it: that version and architecture.
    expect(listed).toContain(`.package/${debName}`);
    const carried = join(tmp.path, 'carried.deb');
    writeFileSync(carried, spawnSync('tar', ['-xzOf', bundle, `.package/${debName}`], { maxBuffer: 256 << 20 }).stdout);
    const carriedField = (name: string) => spawnSync('dpkg-deb', ['-f', carried, name], { encoding: 'utf8' }).stdout.trim();
    expect([carriedField('Package'), carriedField('Version'), carriedField('Architecture')]).toEqual(['door-agent', version, arch]);

    const made = runCli(['service', 'fleet-keys', '--out', keys]);
    expect(made.status, made.stderr).toBe(0);
    const signed = runCli(['release', 'sign', '--key', join(keys, 'release.key'), bundle]);
    expect(signed.status, signed.stderr).toBe(0);
    const verified = runCli(['release', 'verify', '--key', join(keys, 'release.pub'), bundle]);
    expect(verified.stdout).toBe(
      `${bundle}: version ${version} for ${arch}, signed by the release key: good\n` +
        `it carries .package/${debName}, that release: boards installed from the package take it\n`,
    );
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

  // The fleet's updates ship the same package (docs/fleet.md, "A board installed from the package"): the release
  // bundle carries its .deb; update apply on the board installs it with dpkg under the fail-secure stop and, for the
  // way back, rebuilds the installed version's package from dpkg's records first. The board has no systemd: update
  // apply runs in its chroot with --root / and starts the daemon itself, as in a test root.
  it("the fleet's updates ship the same package: update apply installs the release's .deb, keeps the version it replaced, and rolls back to it by itself", async () => {
    const bumped = (by: number) => version.replace(/\d+$/, (patch) => String(Number(patch) + by));
    const [good, failing, bare] = [bumped(1), bumped(2), bumped(3)];
    const bundles = join(tmp.path, 'update-bundles');
    /** The released program as another version (a failing one: its command throws), bundled with or without its package. */
    const bundleAs = async (v: string, options: { fails?: boolean; withPackage: boolean }) => {
      const dir = join(tmp.path, `program-${v}`);
      expect(spawnSync('mkdir', ['-p', dir]).status).toBe(0);
      expectOk(await spawnRun('tar', ['-xzf', releaseBundle, '-C', dir, '--exclude=RELEASE.json', '--exclude=.package']));
      const manifest = join(dir, 'package.json');
      writeFileSync(manifest, JSON.stringify(Object.assign(JSON.parse(readFileSync(manifest, 'utf8')) as object, { version: v }), null, 2));
      if (options.fails) writeFileSync(join(dir, 'dist/cli/door-agent.js'), "throw new Error('this build does not start');\n");
      const args = ['-n', '15', 'bash', join(SRC, 'scripts/release-bundle.sh'), '--program', dir, '--out', bundles];
      const made = await spawnRun('nice', options.withPackage ? [...args, '--with-package'] : args);
      expectOk(made);
      const bundle = join(bundles, `door-agent-${v}-${arch}.tar.gz`);
      const signed = runCli(['release', 'sign', '--key', join(keys, 'release.key'), bundle]);
      expect(signed.status, signed.stderr).toBe(0);
      for (const f of [bundle, `${bundle}.sig.json`]) copyFileSync(f, board(`tmp/${f.slice(bundles.length + 1)}`));
      return `/tmp/door-agent-${v}-${arch}.tar.gz`;
    };
    const made = await Promise.all([
      bundleAs(good, { withPackage: true }),
      bundleAs(failing, { fails: true, withPackage: true }),
      bundleAs(bare, { withPackage: false }),
    ]);
    const [goodBundle, failingBundle, bareBundle] = made;

    // The board as an installer leaves it: the package from apt, a door on the simulated driver, the daemon running.
    expectOk(await root.run(`cd /tmp && apt install -y ./${debName}`));
    copyFileSync(join(keys, 'release.pub'), board('root/release.pub'));
    writeFileSync(
      board('etc/door-agent/config.yaml'),
      [
        'agent: { id: deb-board, controlSocket: /run/door-agent/control.sock }',
        'access: { groups: [Staff] }',
        'gpio: { driver: simulated, simulatedDir: /run/door-agent/gpio }',
        'doors:',
        '  - { uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, resourceId: 12, name: Front door, relay: { pin: 17 } }',
        '',
      ].join('\n'),
    );
    expectOk(await root.run('mkdir -p /run/door-agent && door-agent config check'));
    expectOk(await root.run('door-agent run >/var/log/door-agent-first.log 2>&1 </dev/null & sleep 0.2'));
    const cli = (...args: string[]) => root.run(`door-agent ${args.join(' ')}`);
    const status = async () => (await cli('status')).stdout;
    await (async () => {
      for (let waited = 0; !(await status()).includes('daemon: running'); waited += 500) {
        if (waited > 60_000) throw new Error(`the daemon did not start: ${readFileSync(board('var/log/door-agent-first.log'), 'utf8')}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format, not a JavaScript template
    const installedVersion = async () => (await root.run("dpkg-query -W -f '${Version} ${db:Status-Abbrev}' door-agent")).stdout.trim();
    const update = (bundle: string, bound: number) =>
      root.run(`door-agent update apply --root / ${bundle} --release-key /root/release.pub --health-seconds ${bound}`);
    const kept = `/var/cache/door-agent-update/door-agent_${version}_${arch}.deb`;
    const leftovers = () => readdirSync(board('var/cache/door-agent-update')).filter((n) => n.startsWith('bundle-') || n === 'update');

    // A newer release: its own package installed by dpkg, healthy, the version it replaced kept as a package.
    const r = await update(goodBundle!, 120);
    console.log(`update apply of a package board (verify, repack, dpkg, health): ${r.seconds} s`);
    expectOk(r);
    expect(r.stdout).toContain(
      `the bundle's .package/door-agent_${good}_${arch}.deb is ${good} for ${arch}; the installed ${version} rebuilt from dpkg's records`,
    );
    expect(r.stdout).toContain('door-agent stopped: every relay locked');
    expect(r.stdout).toContain(`dpkg installed ${good}`);
    expect(r.stdout).toContain(`${good} healthy`);
    expect(r.stdout).toContain(`${version} kept as ${kept}`);
    expect(await installedVersion()).toBe(`${good} ii`);
    expect((await cli('--version')).stdout.trim()).toBe(good);
    expect(await status()).toContain('daemon: running');
    // The kept package is the version apt installed, file for file: its listing, md5sums, control and scripts.
    const original = board(`tmp/${debName}`);
    const info = (deb: string, part: string) => spawnSync('dpkg-deb', ['--info', deb, part], { encoding: 'utf8' }).stdout;
    const names = (deb: string) =>
      spawnSync('dpkg-deb', ['-c', deb], { encoding: 'utf8', maxBuffer: 64 << 20 })
        .stdout.split('\n')
        .map((l) => l.replace(/^(\S+) \S+ +\d+ \S+ \S+ /, '$1 '))
        .sort();
    const keptFile = board(kept.slice(1));
    expect(names(keptFile)).toEqual(names(original));
    for (const part of ['md5sums', 'postinst', 'prerm', 'postrm']) expect(info(keptFile, part), part).toBe(info(original, part));
    for (const field of ['Package', 'Version', 'Architecture', 'Depends', 'Installed-Size']) {
      expect(spawnSync('dpkg-deb', ['-f', keptFile, field], { encoding: 'utf8' }).stdout, field).toBe(
        spawnSync('dpkg-deb', ['-f', original, field], { encoding: 'utf8' }).stdout,
      );
    }
    expect(leftovers()).toEqual([]);

    // A release that does not start: switched back by itself, to the installed version rebuilt from dpkg's records.
    const failed = await update(failingBundle!, 60);
    console.log(`update apply of a package that fails (dpkg, fail, dpkg back, health): ${failed.seconds} s`);
    expect(failed.status, failed.stdout + failed.stderr).toBe(1);
    expect(failed.stderr).toContain(
      `update rolled back: ${failing} was not healthy (door-agent run ended (exit 1): Error: this build does not start); rolled back to ${good}`,
    );
    expect(failed.stdout).toContain(`dpkg installed ${good} again, from its copy`);
    expect(await installedVersion()).toBe(`${good} ii`);
    expect((await root.run('dpkg --verify door-agent')).stdout).toBe(''); // every file as the package installed it
    expect((await cli('--version')).stdout.trim()).toBe(good);
    expect(await status()).toContain('daemon: running');
    expect(existsSync(keptFile)).toBe(true); // the last healthy update's copy stays
    expect(leftovers()).toEqual([]);

    // A release without its package: refused before anything is stopped.
    const refused = await update(bareBundle!, 60);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      `update refused, nothing replaced: ${bareBundle} carries no Debian package (.package/door-agent_${bare}_${arch}.deb): this board runs door-agent's package`,
    );
    expect(await installedVersion()).toBe(`${good} ii`);
    const steps = JSON.parse(readFileSync(board('var/lib/door-agent/fleet/update-result.json'), 'utf8')) as Array<{
      version: string;
      state: string;
      detail: string;
    }>;
    // The step that begins a switch names the way back by hand (for a board whose power fails during it).
    expect(steps[2]!.detail).toBe(
      `from ${good} to ${failing} (the way back by hand: sudo dpkg --install /var/cache/door-agent-update/update/door-agent_${good}_${arch}.deb)`,
    );
    expect(steps.map((s) => [s.version, s.state])).toEqual([
      [good, 'installing'],
      [good, 'healthy'],
      [failing, 'installing'],
      [failing, 'rolled_back'],
      [bare, 'refused'],
    ]);
    expectOk(await root.run('kill $(cat /var/lib/door-agent/daemon.pid)'));
  });
});
