import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import type { SignedRelease } from '../../src/api/fleet.js';
import { applyUpdate, type UpdateDeps } from '../../src/fleet/update/applyUpdate.js';
import { checkPackageFields, extractPackage } from '../../src/fleet/update/bundlePackage.js';
import type { DaemonHealth } from '../../src/fleet/update/health.js';
import { type ProgramSwitch, SwitchStranded } from '../../src/fleet/update/programSwitch.js';
import type { ServiceControl } from '../../src/fleet/update/serviceControl.js';
import { controlFromStatus } from '../../src/fleet/update/repackInstalled.js';
import { readSignedRelease, signRelease } from '../../src/fleet/update/signatureFile.js';
import { unpackBundle } from '../../src/fleet/update/unpack.js';
import { appendUpdateStep, readUpdateSteps } from '../../src/fleet/update/updateResult.js';
import { BundleRefused, fileDigest, verifyBundle } from '../../src/fleet/update/verify.js';
import { compareVersions } from '../../src/fleet/update/versions.js';
import { signFleet } from '../../src/protocol/fleetSigning.js';
import { tempDir } from '../support/cli.js';

// The board's side of a signed update with plain files: tar archives made here byte by byte (so that a hostile one
// can be made), keys from node:crypto. The real install, switch and rollback: test/integration/install.test.ts.

const tmp = tempDir('door-agent-update-');
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = (name: string) => join(tmp.path, `${name}-${++n}`);

interface Entry {
  name: string;
  type?: '0' | '1' | '2' | '3' | '5' | '6';
  data?: string | Buffer;
  link?: string;
  mode?: number;
}

function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, '0')}\0`;
}

function header(name: string, type: string, size: number, link = '', mode = 0o644): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0, 100, 'utf8');
  block.write(octal(mode, 8), 100);
  block.write(octal(0, 8), 108);
  block.write(octal(0, 8), 116);
  block.write(octal(size, 12), 124);
  block.write(octal(0, 12), 136);
  block.write('        ', 148);
  block.write(type, 156);
  block.write(link, 157, 100, 'utf8');
  block.write('ustar  \0', 257, 'latin1');
  let sum = 0;
  for (const b of block) sum += b;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return block;
}

const padded = (data: Buffer) => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);

/** A tar archive (GNU long names for paths over 100 bytes), without gzip. */
function tarOf(entries: Entry[], end = true): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = Buffer.from(e.data ?? '');
    if (Buffer.byteLength(e.name) > 100) {
      const long = Buffer.from(`${e.name}\0`);
      parts.push(header('././@LongLink', 'L', long.length), padded(long));
    }
    const type = e.type ?? '0';
    parts.push(header(e.name.slice(0, 100), type, type === '0' ? data.length : 0, e.link ?? '', e.mode ?? (type === '5' ? 0o755 : 0o644)));
    if (type === '0') parts.push(padded(data));
  }
  if (end) parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

function bundleFile(entries: Entry[], options: { end?: boolean } = {}): string {
  const path = `${fresh('bundle')}.tar.gz`;
  writeFileSync(path, gzipSync(tarOf(entries, options.end ?? true)));
  return path;
}

const release = (version: string, arch = 'amd64', abi = '115') => ({ name: 'RELEASE.json', data: JSON.stringify({ version, arch, node_abi: abi }) });
const program = (version: string): Entry[] => [
  release(version),
  { name: './', type: '5' },
  { name: './dist/cli/door-agent.js', data: 'console.log(1)\n', mode: 0o755 },
  { name: './package.json', data: JSON.stringify({ name: 'door-agent', version }) },
];

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof BundleRefused) return err.message;
    throw err;
  }
  throw new Error('not refused');
}

describe('unpacking a bundle: files, directories and links inside the program, nothing else', () => {
  it('unpacks files with the installer modes, relative links, hard links and long names', async () => {
    const long = `./node_modules/${'a'.repeat(60)}/${'b'.repeat(60)}/index.js`;
    const dest = fresh('unpacked');
    const bundle = bundleFile([
      ...program('1.0.0'),
      { name: './bin/', type: '5', mode: 0o777 },
      { name: './bin/tool', type: '2', link: '../dist/cli/door-agent.js' },
      { name: './dist/cli/copy.js', type: '1', link: './dist/cli/door-agent.js' },
      { name: long, data: 'long', mode: 0o4755 },
    ]);
    const result = await unpackBundle(bundle, dest);
    expect(result.files).toBe(5);
    expect(readFileSync(join(dest, 'RELEASE.json'), 'utf8')).toContain('"1.0.0"');
    expect(statSync(join(dest, 'dist/cli/door-agent.js')).mode & 0o7777).toBe(0o755);
    expect(statSync(join(dest, 'package.json')).mode & 0o7777).toBe(0o644);
    expect(statSync(join(dest, 'bin')).mode & 0o7777).toBe(0o755);
    expect(readlinkSync(join(dest, 'bin/tool'))).toBe('../dist/cli/door-agent.js');
    expect(readFileSync(join(dest, 'dist/cli/copy.js'), 'utf8')).toBe('console.log(1)\n');
    expect(statSync(join(dest, long)).mode & 0o7777).toBe(0o755); // no set-uid bit, whatever the bundle says
    expect(readFileSync(join(dest, long), 'utf8')).toBe('long');
  });

  const hostile: Array<[string, Entry[], RegExp]> = [
    ['an absolute path', [{ name: '/etc/cron.d/x', data: 'x' }], /absolute path/],
    ['a ".." part', [{ name: './dist/../../escape', data: 'x' }], /"\.\." part/],
    ['a link out of the tree', [{ name: './bin/sh', type: '2', link: '../../../bin/sh' }], /outside the program/],
    ['an absolute link', [{ name: './bin/sh', type: '2', link: '/bin/sh' }], /points inside the program, relatively/],
    [
      'a path through a link',
      [
        { name: './lib', type: '2', link: 'dist' },
        { name: './lib/x.js', data: 'x' },
      ],
      /lib is a link in the bundle/,
    ],
    ['a device', [{ name: './dev/sda', type: '3' }], /is a device/],
    ['a FIFO', [{ name: './fifo', type: '6' }], /is a FIFO/],
    [
      'a name given twice',
      [
        { name: './a', data: '1' },
        { name: './a', type: '2', link: 'b' },
      ],
      /gives a twice/,
    ],
    ['a hard link to what it has not given', [{ name: './a', type: '1', link: './missing' }], /not a file given before it/],
  ];
  for (const [what, entries, message] of hostile) {
    it(`refuses ${what}, leaving nothing behind`, async () => {
      const dest = fresh('refused');
      const bundle = bundleFile([...program('1.0.0'), ...entries]);
      expect(await refusal(unpackBundle(bundle, dest))).toMatch(message);
      expect(existsSync(dest)).toBe(false);
    });
  }

  it('refuses a truncated archive, leaving nothing behind', async () => {
    const dest = fresh('truncated');
    const whole = tarOf([...program('1.0.0'), { name: './big', data: Buffer.alloc(4096, 7) }], false);
    const bundle = `${fresh('cut')}.tar.gz`;
    writeFileSync(bundle, gzipSync(whole.subarray(0, whole.length - 1024)));
    expect(await refusal(unpackBundle(bundle, dest))).toMatch(/ends inside \.\/big .*truncated/);
    expect(existsSync(dest)).toBe(false);
    writeFileSync(bundle, gzipSync(tarOf(program('1.0.0'))).subarray(0, 100));
    expect(await refusal(unpackBundle(bundle, dest))).toMatch(/not a whole gzip file/);
    expect(existsSync(dest)).toBe(false);
  });
});

describe('verifying a bundle before anything is replaced', () => {
  const keys = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const board = { arch: 'amd64', nodeAbi: '115', installedVersion: '1.0.0' };
  const verify = (bundle: string, signed: SignedRelease, over: Partial<typeof board> = {}, allowDowngrade = false) =>
    verifyBundle({ bundle, signed, releaseKey: keys.publicKey, board: Object.assign({}, board, over), allowDowngrade });

  it('takes a newer bundle signed by the release key', async () => {
    const bundle = bundleFile(program('1.1.0'));
    const signed = await signRelease(bundle, keys.privateKey);
    expect(signed.manifest).toMatchObject({ version: '1.1.0', arch: 'amd64', size: statSync(bundle).size });
    expect(await verify(bundle, signed)).toEqual({ version: '1.1.0', arch: 'amd64', node_abi: '115' });
  });

  it('refuses, naming why: another key, a truncated or altered file, another architecture or Node.js, not newer', async () => {
    const bundle = bundleFile(program('1.1.0'));
    const signed = await signRelease(bundle, keys.privateKey);
    expect(await refusal(verify(bundle, await signRelease(bundle, other.privateKey)))).toMatch(/does not verify with the release key/);
    const forged = { manifest: Object.assign({}, signed.manifest, { version: '9.0.0' }), signature: signed.signature };
    expect(await refusal(verify(bundle, forged))).toMatch(/does not verify/);
    expect(await refusal(verify(bundle, signed, { arch: 'arm64' }))).toMatch(/built for amd64; this board is arm64/);
    expect(await refusal(verify(bundle, signed, { installedVersion: '1.1.0' }))).toMatch(/is the installed version: .*--allow-downgrade/);
    expect(await refusal(verify(bundle, signed, { installedVersion: '2.0.0' }))).toMatch(/older than the installed 2.0.0/);
    expect(await verify(bundle, signed, { installedVersion: '2.0.0' }, true)).toMatchObject({ version: '1.1.0' });
    expect(await refusal(verify(bundle, signed, { nodeAbi: '127' }))).toMatch(/built for Node.js ABI 115; this board's Node.js has ABI 127/);

    const altered = readFileSync(bundle);
    altered[altered.length - 5]! ^= 1;
    writeFileSync(bundle, altered);
    expect(await refusal(verify(bundle, signed))).toMatch(/SHA-256 .* not the .* signed/);
    truncateSync(bundle, signed.manifest.size - 10);
    expect(await refusal(verify(bundle, signed))).toMatch(/bytes, the signed manifest says \d+: truncated/);
  });

  it('refuses a bundle whose RELEASE.json is not what was signed, or not its first entry', async () => {
    const bundle = bundleFile(program('1.1.0'));
    const signed = await signRelease(bundle, keys.privateKey);
    const lying = Object.assign({}, signed.manifest, { version: '1.2.0' });
    expect(await refusal(verify(bundle, { manifest: lying, signature: signFleet(keys.privateKey, 'release', lying) }))).toMatch(
      /RELEASE.json says 1.1.0 for amd64, its signed manifest 1.2.0 for amd64/,
    );
    const later = bundleFile([{ name: './package.json', data: '{}' }, release('1.1.0')]);
    const { sha256, size } = await fileDigest(later);
    const laterManifest = Object.assign({}, signed.manifest, { sha256, size });
    expect(await refusal(verify(later, { manifest: laterManifest, signature: signFleet(keys.privateKey, 'release', laterManifest) }))).toMatch(
      /its first entry is \.\/package\.json, not RELEASE\.json/,
    );
  });

  it('refuses an unsigned bundle: no signature file', () => {
    expect(() => readSignedRelease(join(tmp.path, 'nothing.sig.json'))).toThrow(/no signature: .* does not exist/);
  });

  it('orders versions as semver does', () => {
    expect(compareVersions('1.10.0', '1.9.9')).toBe(1);
    expect(compareVersions('1.0.0-rc.1', '1.0.0')).toBe(-1);
    expect(compareVersions('1.0.0-rc.2', '1.0.0-rc.10')).toBe(-1);
    expect(compareVersions('1.0.0-alpha', '1.0.0-1')).toBe(1);
    expect(compareVersions('2.0.0', '2.0.0')).toBe(0);
    expect(compareVersions('2.0', '2.0.0')).toBeNull();
  });
});

describe('applying an update: the switch, the health bound, the way back', () => {
  const keys = generateKeyPairSync('ed25519');

  /** A root with an installed 1.0.0 (and its .prev 0.9.0), a running daemon as a fake seam, its health scripted. */
  function board(healthOf: (version: string) => DaemonHealth | Error) {
    const root = fresh('root');
    for (const [dir, version] of [
      ['opt/door-agent', '1.0.0'],
      ['opt/door-agent.prev', '0.9.0'],
    ] as const) {
      mkdirSync(join(root, dir), { recursive: true });
      writeFileSync(join(root, dir, 'package.json'), JSON.stringify({ name: 'door-agent', version }));
    }
    const dataDir = join(root, 'data');
    mkdirSync(dataDir);
    const calls: string[] = [];
    let running: string | null = '1.0.0';
    const installed = () => (JSON.parse(readFileSync(join(root, 'opt/door-agent/package.json'), 'utf8')) as { version: string }).version;
    const service: ServiceControl = {
      isActive: async () => running !== null,
      stop: async () => {
        calls.push(`stop ${running}`);
        running = null;
      },
      start: async () => {
        running = installed();
        calls.push(`start ${running}`);
      },
      gone: () => null,
    };
    let now = 0;
    const deps: UpdateDeps = {
      service,
      probe: async () => {
        if (running === null) throw new Error('not running');
        const h = healthOf(running);
        if (h instanceof Error) throw h;
        return h;
      },
      clock: { wallNow: () => 1_700_000_000_000 + now, monoNow: () => now },
      sleep: async (ms) => {
        now += ms;
      },
      say: () => undefined,
    };
    return { root, dataDir, calls, deps, installed };
  }
  const healthy = (version: string): DaemonHealth => ({
    version,
    doors: [{ name: 'Front door', lock: 'LOCKED', relay: { level: 0, expected: 0 }, readers: true }],
    service: { reached: true },
    broker: { reached: true },
  });

  async function apply(
    b: ReturnType<typeof board>,
    version: string,
    options: { afterBundleCopy?: (bundle: string) => void; named?: (bundle: string) => string; program?: ProgramSwitch } = {},
  ) {
    const bundle = bundleFile(program(version));
    const signed = await signRelease(bundle, keys.privateKey);
    const afterBundleCopy = options.afterBundleCopy;
    return applyUpdate(
      {
        bundle: options.named?.(bundle) ?? bundle,
        signed,
        releaseKey: keys.publicKey,
        allowDowngrade: false,
        healthBoundMs: 30_000,
        root: b.root,
        dataDir: b.dataDir,
        rolloutId: 7,
        board: { arch: 'amd64', nodeAbi: '115' },
      },
      Object.assign(
        {},
        b.deps,
        afterBundleCopy ? { afterBundleCopy: () => afterBundleCopy(bundle) } : {},
        options.program ? { program: async () => options.program! } : {},
      ),
    );
  }
  /** What is left of root's copies of the bundle beside the program. */
  const incoming = (b: ReturnType<typeof board>) => readdirSync(join(b.root, 'opt')).filter((name) => name.startsWith('door-agent.incoming-'));

  it('a healthy version stays, the one it replaced in .prev; each step in update-result.json (0600)', async () => {
    const b = board(healthy);
    expect(await apply(b, '1.1.0')).toMatchObject({ state: 'healthy' });
    expect(b.calls).toEqual(['stop 1.0.0', 'start 1.1.0']);
    expect(b.installed()).toBe('1.1.0');
    expect(readFileSync(join(b.root, 'opt/door-agent.prev/package.json'), 'utf8')).toContain('1.0.0');
    for (const gone of ['opt/door-agent.new', 'opt/door-agent.prev-kept']) expect(existsSync(join(b.root, gone)), gone).toBe(false);
    expect(readUpdateSteps(b.dataDir).map((s) => [s.rollout_id, s.version, s.state])).toEqual([
      [7, '1.1.0', 'installing'],
      [7, '1.1.0', 'healthy'],
    ]);
    expect(statSync(join(b.dataDir, 'fleet/update-result.json')).mode & 0o777).toBe(0o600);
  });

  it('a version whose relay is not driven, or that no longer reaches the broker, is rolled back within the bound: all as before', async () => {
    const b = board((version) =>
      version === '1.0.0'
        ? healthy(version)
        : Object.assign(healthy(version), {
            broker: { reached: false },
            doors: [{ name: 'Front door', lock: 'LOCKED', relay: { level: 1, expected: 0 }, readers: false }],
          }),
    );
    const outcome = await apply(b, '1.1.0');
    expect(outcome.state).toBe('rolled_back');
    expect(outcome.detail).toMatch(
      /not healthy within 30 s: Front door: its relay reads 1, its LOCKED level is 0; Front door: its reader is not open; the broker not reached/,
    );
    expect(b.calls).toEqual(['stop 1.0.0', 'start 1.1.0', 'stop 1.1.0', 'start 1.0.0']);
    expect(b.installed()).toBe('1.0.0');
    expect(readFileSync(join(b.root, 'opt/door-agent.prev/package.json'), 'utf8')).toContain('0.9.0');
    for (const gone of ['opt/door-agent.new', 'opt/door-agent.prev-kept']) expect(existsSync(join(b.root, gone)), gone).toBe(false);
    expect(readUpdateSteps(b.dataDir).map((s) => s.state)).toEqual(['installing', 'rolled_back']);
  });

  it('a refused bundle touches nothing: no stop, no switch', async () => {
    const b = board(healthy);
    expect(await apply(b, '0.9.5')).toMatchObject({ state: 'refused', detail: expect.stringMatching(/older than the installed 1.0.0/) });
    expect(b.calls).toEqual([]);
    expect(b.installed()).toBe('1.0.0');
    expect(lstatSync(join(b.root, 'opt/door-agent.prev')).isDirectory()).toBe(true);
    expect(existsSync(join(b.root, 'opt/door-agent.new'))).toBe(false);
    expect(readUpdateSteps(b.dataDir).map((s) => s.state)).toEqual(['refused']);
  });

  it('installs what was signed even when the bundle is replaced once root has copied it; a bundle named through a link is refused', async () => {
    const b = board(healthy);
    // The daemon's user swaps the downloaded file for its own build, right after root's copy.
    const evil = bundleFile([...program('1.1.0'), { name: './dist/cli/evil.js', data: 'the build root must not run\n' }]);
    const outcome = await apply(b, '1.1.0', { afterBundleCopy: (bundle) => writeFileSync(bundle, readFileSync(evil)) });
    expect(outcome).toMatchObject({ state: 'healthy' });
    expect(b.installed()).toBe('1.1.0');
    expect(existsSync(join(b.root, 'opt/door-agent/dist/cli/evil.js'))).toBe(false);
    expect(readFileSync(join(b.root, 'opt/door-agent/dist/cli/door-agent.js'), 'utf8')).toBe('console.log(1)\n');
    expect(incoming(b)).toEqual([]);

    const linked = board(healthy);
    const refused = await apply(linked, '1.1.0', {
      named: (bundle) => {
        const link = `${fresh('link')}.tar.gz`;
        symlinkSync(bundle, link);
        return link;
      },
    });
    expect(refused).toMatchObject({ state: 'refused', detail: expect.stringMatching(/^cannot read .*link-\d+\.tar\.gz: it is a link/) });
    expect(linked.calls).toEqual([]);
    expect(linked.installed()).toBe('1.0.0');
    expect(incoming(linked)).toEqual([]);
  });

  it('runs the same steps through any layout (programSwitch.ts): a switch that fails starts the old version again, one that could not undo itself starts nothing; a way back that fails says how to go back by hand', async () => {
    const layout = (fail: 'forward' | 'stranded' | 'back') => {
      const steps: string[] = [];
      const program: ProgramSwitch = {
        installed: '1.0.0',
        incomingPrefix: join(fresh('layout'), 'bundle-'),
        prepare: async (_bundle, signed) => {
          steps.push(`prepare ${signed.manifest.version}`);
          return 'prepared';
        },
        discard: () => steps.push('discard'),
        forward: async () => {
          steps.push('forward');
          if (fail === 'forward') throw new Error('dpkg --install failed (exit 1): no space left; dpkg left 1.0.0 installed');
          if (fail === 'stranded')
            throw new SwitchStranded('dpkg --install failed (exit 1); installing 1.0.0 again failed too (by hand: sudo dpkg --install X)');
          return 'forwarded';
        },
        keep: () => 'kept',
        back: async () => {
          steps.push('back');
          throw new Error('dpkg --install failed (exit 2): the copy is damaged');
        },
        byHand: () => 'sudo dpkg --install /var/cache/door-agent-update/update-x/installed.deb',
      };
      mkdirSync(dirname(program.incomingPrefix));
      return { steps, program };
    };
    const switchFails = layout('forward');
    const b = board(healthy);
    const failed = await apply(b, '1.1.0', { program: switchFails.program });
    expect(failed).toEqual({ state: 'failed', detail: 'the switch to 1.1.0 failed: dpkg --install failed (exit 1): no space left; dpkg left 1.0.0 installed' });
    expect(switchFails.steps).toEqual(['prepare 1.1.0', 'forward', 'discard']);
    expect(b.calls).toEqual(['stop 1.0.0', 'start 1.0.0']);

    // Half replaced and not put back: nothing is started on it; the relays stay locked.
    const stranded = layout('stranded');
    const half = board(healthy);
    const left = await apply(half, '1.1.0', { program: stranded.program });
    expect(left.state).toBe('failed');
    expect(left.detail).toMatch(/installing 1\.0\.0 again failed too \(by hand: sudo dpkg --install X\); the daemon is left stopped, its relays locked$/);
    expect(half.calls).toEqual(['stop 1.0.0']);

    const backFails = layout('back');
    const unhealthy = board((version) => (version === '1.0.0' ? healthy(version) : new Error('not answering')));
    const stuck = await apply(unhealthy, '1.1.0', { program: backFails.program });
    expect(stuck.state).toBe('failed');
    expect(stuck.detail).toMatch(
      /^1\.1\.0 was not healthy \(not healthy within 30 s: [^)]*\); switching back to 1\.0\.0 failed: dpkg --install failed \(exit 2\): the copy is damaged \(the daemon is stopped, its relays locked: sudo dpkg --install \/var\/cache\/door-agent-update\/update-x\/installed\.deb\)$/,
    );
    expect(backFails.steps).toEqual(['prepare 1.1.0', 'forward', 'back']);
  });

  it("names the operator's file, not root's copy, when the copy is refused; the copy is removed", async () => {
    const cut = board(healthy);
    let given = '';
    const refused = await apply(cut, '1.2.0', {
      named: (bundle) => {
        given = bundle;
        truncateSync(bundle, 100);
        return bundle;
      },
    });
    expect(refused.state).toBe('refused');
    expect(refused.detail.startsWith(`${given} is 100 bytes, the signed manifest says `), refused.detail).toBe(true);
    expect(refused.detail).toMatch(/: truncated \(an interrupted download\?\)$/);
    expect(incoming(cut)).toEqual([]);
  });
});

describe('the update record, written by root in a directory the door-agent user owns', () => {
  it('never writes through a link planted at its temporary or its final name: the record is written, the files they point to untouched', () => {
    const dataDir = fresh('data');
    const fleet = join(dataDir, 'fleet');
    mkdirSync(fleet, { recursive: true });
    chownSync(fleet, 65534, 65534); // the door-agent user's (nobody here)
    const victims = [fresh('shadow'), fresh('passwd')];
    for (const victim of victims) writeFileSync(victim, 'root:secret\n', { mode: 0o640 });
    const before = victims.map((v) => ({ text: readFileSync(v, 'utf8'), uid: statSync(v).uid, gid: statSync(v).gid, mode: statSync(v).mode }));
    symlinkSync(victims[0]!, join(fleet, 'update-result.json.new'));
    symlinkSync(victims[1]!, join(fleet, 'update-result.json'));
    const step = { at: '2026-07-01T12:00:00.000Z', rollout_id: 7, version: '1.1.0', state: 'installing' as const, detail: 'from 1.0.0 to 1.1.0' };

    appendUpdateStep(dataDir, step);
    expect(victims.map((v) => ({ text: readFileSync(v, 'utf8'), uid: statSync(v).uid, gid: statSync(v).gid, mode: statSync(v).mode }))).toEqual(before);
    const record = lstatSync(join(fleet, 'update-result.json'));
    expect(record.isFile()).toBe(true);
    expect([record.uid, record.gid, record.mode & 0o777]).toEqual([65534, 65534, 0o600]);
    // The link at the final name was not read as a record either: the one step written is the only one.
    expect(readUpdateSteps(dataDir)).toEqual([step]);
    expect(existsSync(join(fleet, 'update-result.json.new'))).toBe(false);
  });

  it('writes nothing when the fleet directory itself is a link to another directory', () => {
    const dataDir = fresh('data');
    const elsewhere = fresh('etc');
    mkdirSync(dataDir);
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(dataDir, 'fleet'));
    const step = { at: '2026-07-01T12:00:00.000Z', rollout_id: 7, version: '1.1.0', state: 'refused' as const, detail: 'x' };
    expect(() => appendUpdateStep(dataDir, step)).toThrow(
      `${join(dataDir, 'fleet')} is a link, not a directory: the update's record is written only into the directory itself`,
    );
    expect(readdirSync(elsewhere)).toEqual([]);
  });
});

describe('the Debian package a bundle carries, for the boards installed from it (real .deb files from dpkg-deb)', () => {
  /** A small package built with dpkg-deb: door-agent at `version` unless said otherwise. */
  function deb(version: string, pkg = 'door-agent'): Buffer {
    const stage = fresh('deb-stage');
    mkdirSync(join(stage, 'DEBIAN'), { recursive: true });
    mkdirSync(join(stage, 'usr/lib/door-agent'), { recursive: true });
    writeFileSync(join(stage, 'usr/lib/door-agent/package.json'), JSON.stringify({ name: 'door-agent', version }));
    writeFileSync(
      join(stage, 'DEBIAN/control'),
      `Package: ${pkg}\nVersion: ${version}\nArchitecture: amd64\nMaintainer: t <t@example.org>\nDescription: test\n a test package\n`,
    );
    const out = `${fresh('deb')}.deb`;
    const built = spawnSync('dpkg-deb', ['--root-owner-group', '--build', stage, out], { encoding: 'utf8' });
    if (built.error) throw new Error(`dpkg-deb is missing (sudo apt-get install -y dpkg): ${built.error.message}`);
    expect(built.status, built.stderr).toBe(0);
    return readFileSync(out);
  }
  const manifest = { version: '1.1.0', arch: 'amd64' };
  const carrying = (data: Buffer, extra: Entry[] = []) =>
    bundleFile([
      release('1.1.0'),
      { name: '.package/', type: '5' },
      { name: '.package/door-agent_1.1.0_amd64.deb', data },
      ...extra,
      ...program('1.1.0').slice(1),
    ]);

  it('is taken out whole and checked to be that release; the program is unpacked without it', async () => {
    const bytes = deb('1.1.0');
    const bundle = carrying(bytes);
    const out = join(fresh('extracted'));
    expect(await extractPackage(bundle, manifest, out)).toBe(true);
    expect(readFileSync(out).equals(bytes)).toBe(true);
    await checkPackageFields(out, manifest, 'its package');
    const dest = fresh('unpacked');
    expect((await unpackBundle(bundle, dest)).files).toBe(3);
    expect(readdirSync(dest).sort()).toEqual(['RELEASE.json', 'dist', 'package.json']);
    // A bundle without one says so (a board installed from the package refuses it).
    expect(await extractPackage(bundleFile(program('1.1.0')), manifest, join(fresh('none')))).toBe(false);
  });

  it("refuses a package that is not the signed release's: another version or package, not a .deb, a link in its place", async () => {
    const fields = async (data: Buffer) => {
      const out = fresh('extracted');
      expect(await extractPackage(carrying(data), manifest, out)).toBe(true);
      return refusal(checkPackageFields(out, manifest, 'its package'));
    };
    expect(await fields(deb('1.0.9'))).toBe('its package says Version: 1.0.9; the signed release is Version: 1.1.0');
    expect(await fields(deb('1.1.0', 'door-agent-evil'))).toBe('its package says Package: door-agent-evil; the signed release is Package: door-agent');
    expect(await fields(Buffer.from('!<arch>\nnot really\n'))).toMatch(/^its package is not a Debian package dpkg-deb reads: dpkg-deb --field/);
    const linked = bundleFile([release('1.1.0'), { name: '.package/door-agent_1.1.0_amd64.deb', type: '2', link: '/etc/shadow' }]);
    expect(await refusal(extractPackage(linked, manifest, fresh('linked')))).toMatch(
      /\.package\/door-agent_1\.1\.0_amd64\.deb is a symlink, not a package file/,
    );
  });

  it("rebuilds the control file from dpkg's status record without what only dpkg keeps", () => {
    const status = [
      'Package: door-agent',
      'Status: install ok installed',
      'Priority: optional',
      'Version: 1.0.0',
      'Conffiles:',
      ' /etc/x 0123',
      ' /etc/y 4567',
      'Description: door controller daemon',
      ' more words',
      ' .',
      ' and more',
      '',
    ].join('\n');
    expect(controlFromStatus(status)).toBe(
      ['Package: door-agent', 'Priority: optional', 'Version: 1.0.0', 'Description: door controller daemon', ' more words', ' .', ' and more', ''].join('\n'),
    );
  });
});
