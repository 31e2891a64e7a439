import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkChardevPins, probeGpio } from '../../src/hardware/gpioProbe.js';
import { tempDir } from '../support/cli.js';
import { FakeChardev } from '../support/fakeChardev.js';

const dirs: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of dirs.splice(0)) cleanup();
});

function machine(options: { chips?: Record<string, { name: string; label: string; lines: number }>; sysfs?: boolean }) {
  const root = tempDir('door-agent-probe-');
  dirs.push(root.cleanup);
  const dev = join(root.path, 'dev');
  const sysfs = join(root.path, 'sys/class/gpio');
  mkdirSync(dev, { recursive: true });
  if (options.sysfs) {
    mkdirSync(join(sysfs, 'gpiochip512'), { recursive: true });
    writeFileSync(join(sysfs, 'export'), '');
  }
  const kernel = new FakeChardev(dev, options.chips ?? {});
  return { kernel, devDir: dev, sysfsDir: sysfs };
}

describe('probeGpio (config check: which drivers work here)', () => {
  it('a Pi 5 on Trixie without sysfs: the character device, on the RP1', () => {
    const m = machine({ chips: { gpiochip0: { name: 'gpiochip0', label: 'pinctrl-rp1', lines: 54 } } });
    const probe = probeGpio({ binding: () => m.kernel, devDir: m.devDir, sysfsDir: m.sysfsDir });
    expect(probe.suggested).toBe('chardev');
    expect(probe.drivers[0]).toMatchObject({ driver: 'chardev', supported: true });
    expect(probe.drivers[0]!.detail).toContain('BCM pins on gpiochip0 "pinctrl-rp1" (gpio.chip: auto)');
    expect(probe.drivers[1]).toMatchObject({ driver: 'onoff', supported: false });
  });

  it('a Pi with both: the character device is suggested, sysfs is marked deprecated', () => {
    const m = machine({ chips: { gpiochip0: { name: 'gpiochip0', label: 'pinctrl-bcm2711', lines: 58 } }, sysfs: true });
    const probe = probeGpio({ binding: () => m.kernel, devDir: m.devDir, sysfsDir: m.sysfsDir });
    expect(probe.suggested).toBe('chardev');
    expect(probe.drivers[1]!.detail).toContain('deprecated');
  });

  it('chips the service user cannot open: not supported, and the reason given; sysfs suggested if present', () => {
    const m = machine({ chips: { gpiochip0: { name: 'gpiochip0', label: 'pinctrl-bcm2711', lines: 58 } }, sysfs: true });
    m.kernel.denied.add(join(m.devDir, 'gpiochip0'));
    const probe = probeGpio({ binding: () => m.kernel, devDir: m.devDir, sysfsDir: m.sysfsDir });
    expect(probe.drivers[0]).toMatchObject({ supported: false });
    expect(probe.drivers[0]!.detail).toContain('EACCES');
    expect(probe.suggested).toBe('onoff');
  });

  it('the addon not built: says so', () => {
    const m = machine({ chips: { gpiochip0: { name: 'gpiochip0', label: 'pinctrl-bcm2711', lines: 58 } } });
    const probe = probeGpio({
      binding: () => {
        throw new Error('the GPIO addon is not built: run npm ci');
      },
      devDir: m.devDir,
      sysfsDir: m.sysfsDir,
    });
    expect(probe.drivers[0]!.detail).toContain('1 chip(s), but the GPIO addon is not built');
    // A board with GPIO chips is never sent to the simulated driver: the detail says what to fix.
    expect(probe.suggested).toBe('chardev');
  });

  it('a board without a pin controller label: supported, but gpio.chip must be set', () => {
    const m = machine({ chips: { gpiochip0: { name: 'gpiochip0', label: 'gpio-mockup-A', lines: 8 } } });
    const probe = probeGpio({ binding: () => m.kernel, devDir: m.devDir, sysfsDir: m.sysfsDir });
    expect(probe.drivers[0]!.detail).toContain('no pinctrl-* chip: set gpio.chip');
  });
});

describe('checkChardevPins (config check on the board itself)', () => {
  it('names a pin still exported through sysfs, one held by another program, one off the chip; ours are fine', () => {
    const m = machine({ chips: { gpiochip0: { name: 'gpiochip0', label: 'pinctrl-bcm2711', lines: 58 } } });
    const chip = join(m.devDir, 'gpiochip0');
    m.kernel.foreign.set(`${chip}:17`, 'sysfs');
    m.kernel.foreign.set(`${chip}:27`, 'gpio-fan');
    m.kernel.foreign.set(`${chip}:22`, 'door-agent'); // the daemon, running
    const problems = checkChardevPins(
      m.kernel,
      'auto',
      [
        { where: 'doors[0].relay.pin', pin: 17 },
        { where: 'doors[0].contact.pin', pin: 27 },
        { where: 'doors[0].exitButton.pin', pin: 22 },
        { where: 'doors[0].reader.d0', pin: 60 },
        { where: 'doors[0].reader.d1', pin: 6 },
      ],
      m.devDir,
    );
    expect(problems).toEqual([
      'doors[0].relay.pin: GPIO 17 is in use by sysfs (still exported: unexport it or reboot)',
      'doors[0].contact.pin: GPIO 27 is in use by "gpio-fan"',
      'doors[0].reader.d0: GPIO 60 is not on gpiochip0 "pinctrl-bcm2711" (lines 0-57)',
    ]);
  });

  it('a chip label of another board (pinctrl-rp1 on a Pi 4) is reported, with the chips found', () => {
    const m = machine({ chips: { gpiochip0: { name: 'gpiochip0', label: 'pinctrl-bcm2711', lines: 58 } } });
    const problems = checkChardevPins(m.kernel, 'pinctrl-rp1', [{ where: 'doors[0].relay.pin', pin: 17 }], m.devDir);
    expect(problems).toEqual([expect.stringContaining('gpio.chip "pinctrl-rp1": no such GPIO chip; found gpiochip0 "pinctrl-bcm2711"')]);
  });
});
