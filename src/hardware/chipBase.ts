import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DoorAgentError, describeFsError } from '../util/errors.js';

export interface GpioChip {
  name: string;
  label: string;
  base: number;
}

/**
 * The sysfs number of BCM pin 0: the base of the SoC's pin controller, the gpiochip whose label starts with
 * "pinctrl-" (512 or 571 on Raspberry Pi kernels 6.6+, 0 before). On a Pi 5 the header is on the RP1
 * ("pinctrl-rp1"), so that one wins when several pinctrl chips are present. Null when there is none.
 */
export function pinctrlBase(chips: readonly GpioChip[]): GpioChip | null {
  const pinctrl = chips.filter((c) => c.label.startsWith('pinctrl-'));
  if (pinctrl.length === 0) return null;
  const rp1 = pinctrl.find((c) => c.label === 'pinctrl-rp1');
  if (rp1) return rp1;
  return pinctrl.reduce((a, b) => (b.base < a.base ? b : a));
}

/** Reads each gpiochip label and base under a sysfs gpio class directory (normally /sys/class/gpio). */
export function readGpioChips(gpioClassDir: string): GpioChip[] {
  let names: string[];
  try {
    names = readdirSync(gpioClassDir).filter((n) => /^gpiochip\d+$/.test(n));
  } catch (err) {
    throw new DoorAgentError(
      `cannot list ${gpioClassDir}: this machine has no sysfs GPIO (CONFIG_GPIO_SYSFS). ` +
        'Use gpio.driver: simulated to run without hardware.',
      { cause: err },
    );
  }
  return names.map((name) => {
    const read = (file: string) => {
      try {
        return readFileSync(join(gpioClassDir, name, file), 'utf8').trim();
      } catch (err) {
        throw new DoorAgentError(`cannot read ${join(gpioClassDir, name, file)}: ${describeFsError(err)}`, { cause: err });
      }
    };
    const baseText = read('base');
    if (!/^\d+$/.test(baseText)) {
      throw new DoorAgentError(
        `${join(gpioClassDir, name, 'base')} holds ${JSON.stringify(baseText.slice(0, 20))}, not a number: set gpio.chipBase`,
      );
    }
    return { name, label: read('label'), base: Number(baseText) };
  });
}

export function detectChipBase(gpioClassDir: string): number {
  const chip = pinctrlBase(readGpioChips(gpioClassDir));
  if (!chip) {
    throw new DoorAgentError(
      `no pinctrl-* gpiochip under ${gpioClassDir}: cannot map BCM pin numbers. Set gpio.chipBase to the sysfs ` +
        'number of BCM pin 0 (see `cat /sys/class/gpio/gpiochip*/label /sys/class/gpio/gpiochip*/base`).',
    );
  }
  return chip.base;
}
