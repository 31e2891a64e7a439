import { existsSync, readdirSync } from 'node:fs';
import type { ChardevBinding } from './chardev/binding.js';
import { CONSUMER, DEV_DIR, listChips, resolveChip } from './chardev/chardevGpio.js';
import { pickPinController } from './chipBase.js';
import { SYSFS_GPIO_DIR } from './onoffGpio.js';

export interface DriverSupport {
  driver: 'chardev' | 'onoff' | 'simulated';
  supported: boolean;
  /** What was found, or why not, for an installer. */
  detail: string;
}

export interface GpioProbe {
  drivers: DriverSupport[];
  /** The driver to use here: the character device wherever it works, sysfs where only it does, else simulated. */
  suggested: DriverSupport['driver'];
}

/**
 * Which GPIO drivers this machine supports (`config check`): the character device needs /dev/gpiochipN that
 * our addon can open, ideally a pin controller (pinctrl-*) so BCM numbers work; sysfs needs /sys/class/gpio.
 */
export function probeGpio(options: { binding: () => ChardevBinding; devDir?: string; sysfsDir?: string }): GpioProbe {
  const devDir = options.devDir ?? DEV_DIR;
  const sysfsDir = options.sysfsDir ?? SYSFS_GPIO_DIR;
  let chardev: DriverSupport;
  let devices: string[] = [];
  try {
    devices = readdirSync(devDir).filter((n) => /^gpiochip\d+$/.test(n));
  } catch {
    devices = [];
  }
  if (devices.length === 0) {
    chardev = { driver: 'chardev', supported: false, detail: `no ${devDir}/gpiochip* (no GPIO chip on this machine)` };
  } else {
    let binding: ChardevBinding | null = null;
    let loadError = '';
    try {
      binding = options.binding();
    } catch (err) {
      loadError = err instanceof Error ? err.message : String(err);
    }
    if (!binding) {
      chardev = { driver: 'chardev', supported: false, detail: `${devices.length} chip(s), but ${loadError}` };
    } else {
      const { chips, unreadable } = listChips(binding, devDir);
      const pinctrl = pickPinController(chips);
      const found = chips.map((c) => `${c.name} "${c.label}"`).join(', ');
      const denied = unreadable.length > 0 ? `; cannot open ${unreadable.map((u) => `${u.path} (${u.error})`).join(', ')}` : '';
      chardev =
        chips.length === 0
          ? { driver: 'chardev', supported: false, detail: `no chip could be opened${denied}` }
          : {
              driver: 'chardev',
              supported: true,
              detail: `${found}${denied}; ${pinctrl ? `BCM pins on ${pinctrl.name} "${pinctrl.label}" (gpio.chip: auto)` : 'no pinctrl-* chip: set gpio.chip'}`,
            };
    }
  }
  const sysfsChips = existsSync(sysfsDir) ? readdirSync(sysfsDir).filter((n) => /^gpiochip\d+$/.test(n)) : [];
  const onoff: DriverSupport =
    sysfsChips.length > 0
      ? { driver: 'onoff', supported: true, detail: `${sysfsDir} with ${sysfsChips.length} chip(s) (deprecated upstream; prefer chardev)` }
      : { driver: 'onoff', supported: false, detail: `no ${sysfsDir}/gpiochip* (kernel without CONFIG_GPIO_SYSFS, or no GPIO)` };
  const simulated: DriverSupport = { driver: 'simulated', supported: true, detail: 'always (files under gpio.simulatedDir; no hardware)' };
  // A board with GPIO chips is never pointed at the simulated driver (it would drive nothing): the chardev
  // detail says what to fix (the gpio group, the addon build).
  const suggested = chardev.supported ? 'chardev' : onoff.supported ? 'onoff' : devices.length > 0 ? 'chardev' : 'simulated';
  return { drivers: [chardev, onoff, simulated], suggested };
}

/**
 * For a chardev configuration on the machine that will run it: the chip is found, and each configured pin
 * exists and is free (or held by door-agent itself, running). What the daemon would otherwise find at start,
 * in a restart loop: a chip label of another board, a pin still exported through sysfs after a migration.
 */
export function checkChardevPins(
  binding: ChardevBinding,
  chipSetting: string,
  pins: ReadonlyArray<{ where: string; pin: number }>,
  devDir = DEV_DIR,
): string[] {
  let chip;
  try {
    chip = resolveChip(binding, chipSetting, devDir);
  } catch (err) {
    return [err instanceof Error ? err.message : String(err)];
  }
  const problems: string[] = [];
  for (const { where, pin } of pins) {
    if (pin >= chip.lines) {
      problems.push(`${where}: GPIO ${pin} is not on ${chip.name} "${chip.label}" (lines 0-${chip.lines - 1})`);
      continue;
    }
    try {
      const info = binding.lineInfo(chip.path, pin);
      if (info.used && info.consumer !== CONSUMER) {
        const who =
          info.consumer === 'sysfs'
            ? 'sysfs (still exported: unexport it or reboot)'
            : info.consumer
              ? `"${info.consumer}"`
              : 'the kernel (an overlay or a bus: I2C, SPI, UART)';
        problems.push(`${where}: GPIO ${pin} is in use by ${who}`);
      }
    } catch (err) {
      problems.push(`${where}: GPIO ${pin}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return problems;
}
