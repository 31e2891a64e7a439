/**
 * The real onoff driver's output path against a fake sysfs GPIO tree. onoff hardcodes /sys/class/gpio/ and this
 * machine has none, so each case runs in a private mount namespace (`unshare -m`, root only) with a tmpfs over
 * /sys/class, builds the tree there, runs the built code, and prints the tree as JSON for the test to check.
 * The host's /sys is never mounted over. onoff's watch() (inputs) cannot be tested this way: epoll refuses
 * regular files.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, DOOR_UUID, ROOT, tempDir } from '../support/cli.js';

const ONOFF_GPIO_JS = join(ROOT, 'dist/src/hardware/onoffGpio.js');
const NEEDS = 'this test needs root and `unshare -m` (util-linux) to mount a fake /sys/class/gpio in a private mount namespace';

interface Chip {
  base: number;
  label: string;
}
interface Pin {
  /** sysfs number (gpio<N>) */
  number: number;
  value: string;
  direction?: string;
  /** active_low file content; default "0\n" */
  activeLow?: string;
}
interface NsResult {
  /** exit status of the command under test (not of the whole script) */
  status: number;
  stdout: string;
  stderr: string;
  /** every file under /sys/class/gpio inside the namespace, by path relative to it */
  tree: Record<string, string>;
  /** the /sys/class line of /proc/self/mountinfo inside the namespace */
  mount: string;
}

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const BEGIN = '@@door-agent-test-dump-begin@@';
const END = '@@door-agent-test-dump-end@@';

let tmp: ReturnType<typeof tempDir>;
let caseNo = 0;
let dumpScript: string;

let unshareChecked = false;

/** Throws (failing the test) unless we can create a mount namespace and mount over /sys/class in it. */
function requireUnshare(): void {
  if (unshareChecked) return;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new Error(`${NEEDS}; running as uid ${process.getuid()}. Run the tests as root.`);
  }
  const probe = spawnSync('unshare', ['-m', 'sh', '-c', 'mount --make-rprivate / && mount -t tmpfs door-agent-probe /sys/class'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (probe.error) {
    throw new Error(`${NEEDS}; could not run unshare: ${probe.error.message} (apt-get install util-linux mount)`);
  }
  if (probe.status !== 0) {
    throw new Error(`${NEEDS}; the probe failed with status ${probe.status}: ${probe.stderr.trim()}`);
  }
  unshareChecked = true;
}

/**
 * Builds the fake tree inside a new mount namespace, runs `command` (a shell command line) there, and returns
 * its status and output with the tree as it is afterwards.
 */
function inNamespace(setup: { chips: Chip[]; pins?: Pin[]; noGpioClass?: boolean }, command: string): NsResult {
  const dir = join(tmp.path, `case${++caseNo}`);
  const lines = [
    'set -e',
    // Private first, so nothing mounted below can propagate to the host's mount table.
    'mount --make-rprivate /',
    'mount -t tmpfs -o mode=0755 door-agent-test /sys/class',
    'G=/sys/class/gpio',
  ];
  if (!setup.noGpioClass) lines.push('mkdir "$G"', ': > "$G/export"', ': > "$G/unexport"');
  for (const chip of setup.chips) {
    const c = `"$G/gpiochip${chip.base}"`;
    lines.push(`mkdir ${c}`, `printf '%s\\n' ${sh(chip.label)} > ${c}/label`, `printf '%s\\n' ${chip.base} > ${c}/base`);
    lines.push(`printf '32\\n' > ${c}/ngpio`);
  }
  for (const pin of setup.pins ?? []) {
    // Pre-created like the kernel's export would, so onoff skips writing to export.
    const p = `"$G/gpio${pin.number}"`;
    lines.push(
      `mkdir ${p}`,
      `printf '%s' ${sh(pin.value)} > ${p}/value`,
      `printf '%s' ${sh(pin.direction ?? 'in\n')} > ${p}/direction`,
      `printf '%s' ${sh(pin.activeLow ?? '0\n')} > ${p}/active_low`,
      `printf 'none\\n' > ${p}/edge`,
    );
  }
  lines.push(
    `mkdir -p ${sh(dir)}`,
    'set +e',
    `${command} > ${sh(join(dir, 'out'))} 2> ${sh(join(dir, 'err'))}`,
    'status=$?',
    'set -e',
    `echo ${BEGIN}`,
    `${sh(process.execPath)} ${sh(dumpScript)} "$G" ${sh(join(dir, 'out'))} ${sh(join(dir, 'err'))} "$status"`,
    `echo ${END}`,
  );
  const result = spawnSync('unshare', ['-m', 'sh', '-c', lines.join('\n')], {
    encoding: 'utf8',
    // Below the 30 s test timeout: a command that never exits (say, a handle keeping relock alive) fails clearly.
    timeout: 20_000,
    killSignal: 'SIGKILL',
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  if (result.error) {
    const why = (result.error as NodeJS.ErrnoException).code === 'ENOENT' ? NEEDS : 'the namespace script did not finish in 20 s';
    throw new Error(`${why}: ${result.error.message}\n${result.stdout}\n${result.stderr}`);
  }
  const start = result.stdout.indexOf(BEGIN);
  const end = result.stdout.indexOf(END);
  if (result.status !== 0 || start < 0 || end < start) {
    throw new Error(`namespace script failed (status ${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  return JSON.parse(result.stdout.slice(start + BEGIN.length, end)) as NsResult;
}

const DUMP = `
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const [root, out, err, status] = process.argv.slice(2);
const tree = {};
const walk = (rel) => {
  if (!existsSync(join(root, rel))) return;
  for (const name of readdirSync(join(root, rel)).sort()) {
    const r = rel ? rel + '/' + name : name;
    if (statSync(join(root, r)).isDirectory()) walk(r);
    else tree[r] = readFileSync(join(root, r), 'utf8');
  }
};
walk('');
const mount = readFileSync('/proc/self/mountinfo', 'utf8').split('\\n').find((l) => l.split(' ')[4] === '/sys/class') ?? '';
process.stdout.write(JSON.stringify({
  status: Number(status), stdout: readFileSync(out, 'utf8'), stderr: readFileSync(err, 'utf8'), tree, mount,
}));
`;

interface DoorSpec {
  pin: number;
  activeLow?: boolean;
  failMode?: 'secure' | 'safe';
}

function writeOnoffConfig(chipBase: 'auto' | number, door: DoorSpec): string {
  const path = join(tmp.path, `config${++caseNo}.yaml`);
  writeFileSync(
    path,
    `agent: { id: t, dataDir: ${join(tmp.path, 'data')} }
access: { groups: [Staff] }
gpio: { driver: onoff, chipBase: ${chipBase} }
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    name: Front door
    relay: { pin: ${door.pin}, activeLow: ${door.activeLow ?? false} }
    failMode: ${door.failMode ?? 'secure'}
`,
  );
  return path;
}

const relockCommand = (config: string) => `${sh(process.execPath)} ${sh(CLI)} relock --config ${sh(config)}`;
const PI4_CHIPS: Chip[] = [
  { base: 512, label: 'pinctrl-bcm2711' },
  { base: 570, label: 'raspberrypi-exp-gpio' },
];

describe('onoff driver against a fake /sys/class/gpio (unshare -m, tmpfs)', () => {
  const hostHadGpio = existsSync('/sys/class/gpio');
  const hostClassEntries = existsSync('/sys/class') ? readdirSync('/sys/class').sort() : [];

  beforeAll(() => {
    tmp = tempDir('door-agent-onoff-');
    dumpScript = join(tmp.path, 'dump.mjs');
    writeFileSync(dumpScript, DUMP);
  });
  afterAll(() => {
    tmp.cleanup();
    // The host's /sys must be exactly as before: everything happened in the throwaway namespace.
    expect(existsSync('/sys/class/gpio')).toBe(hostHadGpio);
    expect(existsSync('/sys/class') ? readdirSync('/sys/class').sort() : []).toEqual(hostClassEntries);
  });

  it('can mount a tmpfs over /sys/class in a private mount namespace (root, util-linux unshare)', () => {
    requireUnshare();
    expect(existsSync(CLI), `${CLI} is missing: run npm run build`).toBe(true);
    const ns = inNamespace({ chips: PI4_CHIPS }, 'true');
    // The tree the code under test will see is ours, on the tmpfs, not the host's sysfs.
    expect(ns.mount).toMatch(/ - tmpfs door-agent-test /);
    expect(ns.tree['gpiochip512/label']).toBe('pinctrl-bcm2711\n');
    expect(ns.tree.export).toBe('');
  });

  it('auto-detects chip base 512 and drives BCM 17 through gpio529 without exporting', () => {
    requireUnshare();
    const config = writeOnoffConfig('auto', { pin: 17 });
    const ns = inNamespace(
      {
        chips: PI4_CHIPS,
        // gpio529 starts at the unlocked level; gpio17 is a decoy that must stay untouched.
        pins: [
          { number: 529, value: '1\n' },
          { number: 17, value: '1\n' },
        ],
      },
      relockCommand(config),
    );
    expect(ns.stderr).toBe('');
    expect(ns.status).toBe(0);
    expect(ns.stdout).toBe(`Front door (${DOOR_UUID}): relay GPIO 17 set to 0 (locked)\n`);
    expect(ns.tree['gpio529/value']).toBe('0\n');
    expect(ns.tree['gpio529/direction']).toBe('low');
    expect(ns.tree['gpio529/active_low']?.trim()).toBe('0'); // never inverted in sysfs: levels are physical
    expect(ns.tree['gpio17/value']).toBe('1\n');
    expect(ns.tree['gpio17/direction']).toBe('in\n');
    expect(ns.tree.export).toBe(''); // already exported: onoff must not write export
  });

  it.each([
    ['secure', false, 0],
    ['secure', true, 1],
    ['safe', false, 1],
    ['safe', true, 0],
  ] as const)('failMode %s, activeLow %s: relock leaves gpio529 at the locked level %i', (failMode, activeLow, locked) => {
    requireUnshare();
    const config = writeOnoffConfig('auto', { pin: 17, failMode, activeLow });
    const unlocked = 1 - locked;
    const ns = inNamespace({ chips: PI4_CHIPS, pins: [{ number: 529, value: `${unlocked}\n` }] }, relockCommand(config));
    expect(ns.stderr).toBe('');
    expect(ns.status).toBe(0);
    expect(ns.stdout).toContain(`relay GPIO 17 set to ${locked} (locked)`);
    expect(ns.tree['gpio529/value']).toBe(`${locked}\n`);
    // Direction and level in one write ("high"/"low"), so the pin never glitches through the other level.
    expect(ns.tree['gpio529/direction']).toBe(locked === 1 ? 'high' : 'low');
    expect(ns.tree['gpio529/active_low']?.trim()).toBe('0');
  });

  it('resets an active_low left at 1 by another program, so "locked" is the physical locked level', () => {
    requireUnshare();
    const config = writeOnoffConfig('auto', { pin: 17 });
    const ns = inNamespace({ chips: PI4_CHIPS, pins: [{ number: 529, value: '1\n', activeLow: '1\n' }] }, relockCommand(config));
    expect(ns.stderr).toBe('');
    expect(ns.status).toBe(0);
    expect(ns.tree['gpio529/active_low']?.trim()).toBe('0');
    expect(ns.tree['gpio529/value']).toBe('0\n');
  });

  it('uses gpio17 for BCM 17 when gpio.chipBase is 0, even though a pinctrl chip says 512', () => {
    requireUnshare();
    const config = writeOnoffConfig(0, { pin: 17 });
    const ns = inNamespace(
      {
        chips: PI4_CHIPS,
        pins: [
          { number: 17, value: '1\n' },
          { number: 529, value: '1\n' },
        ],
      },
      relockCommand(config),
    );
    expect(ns.stderr).toBe('');
    expect(ns.status).toBe(0);
    expect(ns.tree['gpio17/value']).toBe('0\n');
    expect(ns.tree['gpio17/direction']).toBe('low');
    expect(ns.tree['gpio529/value']).toBe('1\n');
    expect(ns.tree['gpio529/direction']).toBe('in\n');
    expect(ns.tree.export).toBe('');
  });

  it('picks pinctrl-rp1 at 571 on a Pi 5 style tree: BCM 17 is gpio588', () => {
    requireUnshare();
    const config = writeOnoffConfig('auto', { pin: 17 });
    const ns = inNamespace(
      {
        chips: [
          { base: 512, label: 'gpio-brcmstb@107d508500' },
          { base: 544, label: 'pinctrl-bcm2712' },
          { base: 571, label: 'pinctrl-rp1' },
        ],
        pins: [
          { number: 588, value: '1\n' },
          { number: 529, value: '1\n' },
          { number: 561, value: '1\n' },
        ],
      },
      relockCommand(config),
    );
    expect(ns.stderr).toBe('');
    expect(ns.status).toBe(0);
    expect(ns.tree['gpio588/value']).toBe('0\n');
    expect(ns.tree['gpio529/value']).toBe('1\n');
    expect(ns.tree['gpio561/value']).toBe('1\n');
  });

  it('OnoffGpio (built) writes and reads back through the sysfs value file', () => {
    requireUnshare();
    expect(existsSync(ONOFF_GPIO_JS), `${ONOFF_GPIO_JS} is missing: run npm run build`).toBe(true);
    const script = `
      const { OnoffGpio } = await import(${JSON.stringify(ONOFF_GPIO_JS)});
      const { readFileSync } = await import('node:fs');
      const value = () => readFileSync('/sys/class/gpio/gpio529/value', 'utf8');
      const driver = new OnoffGpio({ chipBase: 'auto' });
      const out = driver.openOutput(17, 1);
      const steps = [{ pin: out.pin, read: out.read(), file: value() }];
      for (const level of [0, 1, 0]) {
        out.write(level);
        steps.push({ read: out.read(), file: value() });
      }
      driver.close();
      process.stdout.write(JSON.stringify({ name: driver.name, steps }));
    `;
    const ns = inNamespace({ chips: PI4_CHIPS, pins: [{ number: 529, value: '0\n' }] }, `${sh(process.execPath)} --input-type=module -e ${sh(script)}`);
    expect(ns.stderr).toBe('');
    expect(ns.status).toBe(0);
    const { name, steps } = JSON.parse(ns.stdout) as { name: string; steps: Array<{ pin?: number; read: number; file: string }> };
    expect(name).toBe('onoff');
    expect(steps).toEqual([
      { pin: 17, read: 1, file: '1\n' },
      { read: 0, file: '0\n' },
      { read: 1, file: '1\n' },
      { read: 0, file: '0\n' },
    ]);
    expect(ns.tree['gpio529/direction']).toBe('high'); // opened high: direction and level in one write
    expect(ns.tree['gpio529/value']).toBe('0\n');
  });

  it('writes the detected sysfs number to export when the pin is not exported yet, and names it on failure', () => {
    requireUnshare();
    // No kernel here to create gpio529/ after the export write, so onoff gives up: relock must say which pin.
    const config = writeOnoffConfig('auto', { pin: 17 });
    const ns = inNamespace({ chips: PI4_CHIPS }, relockCommand(config));
    expect(ns.tree.export).toBe('529');
    expect(ns.status).toBe(1);
    expect(ns.stderr).toContain(`Front door (${DOOR_UUID})`);
    expect(ns.stderr).toContain('GPIO 17 (sysfs gpio529)');
  });

  it('relock fails naming gpio.chipBase when no gpiochip is a pin controller', () => {
    requireUnshare();
    const config = writeOnoffConfig('auto', { pin: 17 });
    const ns = inNamespace({ chips: [{ base: 504, label: 'raspberrypi-exp-gpio' }], pins: [{ number: 521, value: '1\n' }] }, relockCommand(config));
    expect(ns.status).toBe(1);
    expect(ns.stdout).toBe('');
    expect(ns.stderr).toContain(`Front door (${DOOR_UUID})`);
    expect(ns.stderr).toContain('gpio.chipBase');
    expect(ns.tree.export).toBe('');
    expect(ns.tree['gpio521/value']).toBe('1\n');
  });

  it('relock on a machine without sysfs GPIO points at gpio.driver: simulated', () => {
    requireUnshare();
    const config = writeOnoffConfig('auto', { pin: 17 });
    const ns = inNamespace({ chips: [], noGpioClass: true }, relockCommand(config));
    expect(ns.mount).toMatch(/ - tmpfs door-agent-test /);
    expect(ns.tree).toEqual({});
    expect(ns.status).toBe(1);
    expect(ns.stderr).toContain(`Front door (${DOOR_UUID})`);
    expect(ns.stderr).toContain('cannot list /sys/class/gpio');
    expect(ns.stderr).toContain('gpio.driver: simulated');
  });
});
