import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectChipBase, pinctrlBase, readGpioChips, type GpioChip } from '../../src/hardware/chipBase.js';
import { DoorAgentError } from '../../src/util/errors.js';
import { tempDir } from '../support/cli.js';

const chip = (base: number, label: string): GpioChip => ({ name: `gpiochip${base}`, label, base });

// Raspberry Pi 4, kernel 6.6+: the SoC controller moved to 512, the firmware expander sits above it.
const PI4_KERNEL_66 = [chip(512, 'pinctrl-bcm2711'), chip(570, 'raspberrypi-exp-gpio')];
// Raspberry Pi 5, kernel 6.6+: the 40-pin header is on the RP1, whose base is not the lowest.
const PI5_KERNEL_66 = [chip(512, 'gpio-brcmstb@107d508500'), chip(544, 'pinctrl-bcm2712'), chip(548, 'gpio-brcmstb@107d517c00'), chip(571, 'pinctrl-rp1')];
// Raspberry Pi 3, kernel 5.x: the SoC controller is at 0.
const PI3_OLD_KERNEL = [chip(0, 'pinctrl-bcm2835'), chip(504, 'raspberrypi-exp-gpio')];

describe('pinctrlBase', () => {
  it('picks the only pinctrl chip (Pi 4, kernel 6.6: pinctrl-bcm2711 at 512)', () => {
    expect(pinctrlBase(PI4_KERNEL_66)).toEqual(chip(512, 'pinctrl-bcm2711'));
  });

  it('prefers pinctrl-rp1 on a Pi 5 although other chips have lower bases', () => {
    expect(pinctrlBase(PI5_KERNEL_66)?.base).toBe(571);
    expect(pinctrlBase(PI5_KERNEL_66)?.label).toBe('pinctrl-rp1');
  });

  it('prefers pinctrl-rp1 whatever the listing order', () => {
    const reversed = [...PI5_KERNEL_66].reverse();
    expect(pinctrlBase(reversed)?.base).toBe(571);
    const rp1First = [chip(571, 'pinctrl-rp1'), chip(544, 'pinctrl-bcm2712'), chip(512, 'gpio-brcmstb@107d508500')];
    expect(pinctrlBase(rp1First)?.base).toBe(571);
  });

  it('does not take a non-pinctrl chip with a lower base (gpio-brcmstb at 512 on a Pi 5)', () => {
    const withoutRp1 = PI5_KERNEL_66.filter((c) => c.label !== 'pinctrl-rp1');
    expect(pinctrlBase(withoutRp1)).toEqual(chip(544, 'pinctrl-bcm2712'));
  });

  it('takes the lowest base when several pinctrl chips are present and none is the RP1', () => {
    const chips = [chip(600, 'pinctrl-expander'), chip(512, 'pinctrl-bcm2711'), chip(570, 'raspberrypi-exp-gpio')];
    expect(pinctrlBase(chips)?.base).toBe(512);
  });

  it('picks pinctrl-bcm2835 at 0 on an old kernel', () => {
    expect(pinctrlBase(PI3_OLD_KERNEL)).toEqual(chip(0, 'pinctrl-bcm2835'));
  });

  it('returns null when no chip label starts with pinctrl-', () => {
    expect(pinctrlBase([chip(504, 'raspberrypi-exp-gpio'), chip(512, 'gpio-brcmstb@107d508500')])).toBeNull();
    expect(pinctrlBase([chip(0, 'gpio-mockup-A')])).toBeNull();
    expect(pinctrlBase([])).toBeNull();
  });
});

/** Builds a sysfs-like gpio class directory: gpiochipN/{label,base} plus the unrelated entries sysfs has. */
function makeTree(root: string, chips: ReadonlyArray<{ name?: string; base: number; label: string }>): string {
  const dir = join(root, 'gpio');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'export'), '');
  writeFileSync(join(dir, 'unexport'), '');
  for (const c of chips) {
    const chipDir = join(dir, c.name ?? `gpiochip${c.base}`);
    mkdirSync(chipDir);
    // sysfs attributes end with a newline; readGpioChips must trim it.
    writeFileSync(join(chipDir, 'label'), `${c.label}\n`);
    writeFileSync(join(chipDir, 'base'), `${c.base}\n`);
    writeFileSync(join(chipDir, 'ngpio'), '58\n');
  }
  // An exported pin (BCM 17 on a 512-based kernel): not a chip, must be ignored.
  mkdirSync(join(dir, 'gpio529'));
  writeFileSync(join(dir, 'gpio529', 'value'), '0\n');
  writeFileSync(join(dir, 'gpio529', 'direction'), 'out\n');
  return dir;
}

describe('readGpioChips and detectChipBase on a sysfs-like tree', () => {
  let tmp: ReturnType<typeof tempDir> | undefined;
  const root = () => {
    tmp ??= tempDir('door-agent-chipbase-');
    return tmp.path;
  };
  afterEach(() => {
    tmp?.cleanup();
    tmp = undefined;
  });

  it('reads every gpiochip label and base, ignoring export, unexport and gpio<N>', () => {
    const dir = makeTree(root(), [
      { base: 512, label: 'pinctrl-bcm2711' },
      { base: 570, label: 'raspberrypi-exp-gpio' },
    ]);
    const chips = readGpioChips(dir).sort((a, b) => a.base - b.base);
    expect(chips).toEqual([
      { name: 'gpiochip512', label: 'pinctrl-bcm2711', base: 512 },
      { name: 'gpiochip570', label: 'raspberrypi-exp-gpio', base: 570 },
    ]);
  });

  it('detects 512 for a Pi 4 on kernel 6.6', () => {
    const dir = makeTree(root(), [
      { base: 512, label: 'pinctrl-bcm2711' },
      { base: 570, label: 'raspberrypi-exp-gpio' },
    ]);
    expect(detectChipBase(dir)).toBe(512);
  });

  it('detects 571 (pinctrl-rp1) for a Pi 5', () => {
    const dir = makeTree(root(), [
      { base: 512, label: 'gpio-brcmstb@107d508500' },
      { base: 544, label: 'pinctrl-bcm2712' },
      { base: 548, label: 'gpio-brcmstb@107d517c00' },
      { base: 571, label: 'pinctrl-rp1' },
    ]);
    expect(detectChipBase(dir)).toBe(571);
  });

  it('detects 0 on an old kernel', () => {
    const dir = makeTree(root(), [
      { base: 0, label: 'pinctrl-bcm2835' },
      { base: 504, label: 'raspberrypi-exp-gpio' },
    ]);
    expect(detectChipBase(dir)).toBe(0);
  });

  it('takes the base from the base file, not from the directory name', () => {
    const dir = makeTree(root(), [{ name: 'gpiochip0', base: 512, label: 'pinctrl-bcm2711' }]);
    expect(detectChipBase(dir)).toBe(512);
  });

  it('fails with an operator error naming gpio.chipBase when no chip is a pin controller', () => {
    const dir = makeTree(root(), [
      { base: 504, label: 'raspberrypi-exp-gpio' },
      { base: 512, label: 'gpio-brcmstb@107d508500' },
    ]);
    expect(() => detectChipBase(dir)).toThrow(DoorAgentError);
    expect(() => detectChipBase(dir)).toThrow(/gpio\.chipBase/);
    expect(() => detectChipBase(dir)).toThrow(dir);
  });

  it('fails naming gpio.chipBase when the directory has no gpiochip at all', () => {
    const dir = makeTree(root(), []);
    expect(readGpioChips(dir)).toEqual([]);
    expect(() => detectChipBase(dir)).toThrow(/gpio\.chipBase/);
  });

  it('fails with an operator error pointing at gpio.driver: simulated when the directory is missing', () => {
    const missing = join(root(), 'no-such-dir', 'gpio');
    for (const fn of [() => readGpioChips(missing), () => detectChipBase(missing)]) {
      let caught: unknown;
      try {
        fn();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(DoorAgentError);
      const message = (caught as Error).message;
      expect(message).toContain('gpio.driver: simulated');
      expect(message).toContain(missing);
      expect(((caught as Error).cause as NodeJS.ErrnoException | undefined)?.code).toBe('ENOENT');
    }
  });

  it('refuses a base file that is not a number, and a chip missing its label, naming the file', () => {
    const dir = makeTree(root(), [{ base: 512, label: 'pinctrl-bcm2711' }]);
    writeFileSync(join(dir, 'gpiochip512', 'base'), 'x\n');
    expect(() => detectChipBase(dir)).toThrow(/gpiochip512\/base holds "x", not a number: set gpio.chipBase/);
    writeFileSync(join(dir, 'gpiochip512', 'base'), '512\n');
    rmSync(join(dir, 'gpiochip512', 'label'));
    expect(() => readGpioChips(dir)).toThrow(DoorAgentError);
    expect(() => readGpioChips(dir)).toThrow(/cannot read .*gpiochip512\/label: no such file/);
  });
});
