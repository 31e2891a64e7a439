import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DoorAgentError, describeFsError } from '../util/errors.js';

export interface GpioChip {
  name: string;
  label: string;
  base: number;
}

/**
 * The SoC's pin controller among GPIO chips, whose line offsets are BCM numbers on a Raspberry Pi: the chip
 * labelled "pinctrl-*" ("pinctrl-bcm2835" to "pinctrl-bcm2712"). On a Pi 5 the header is on the RP1
 * ("pinctrl-rp1"), so that one wins when several are present; otherwise the first in the order given.
 */
export function pickPinController<T extends { label: string }>(chips: readonly T[]): T | null {
  const pinctrl = chips.filter((c) => c.label.startsWith('pinctrl-'));
  return pinctrl.find((c) => c.label === 'pinctrl-rp1') ?? pinctrl[0] ?? null;
}

/**
 * The sysfs number of BCM pin 0: the base of the pin controller (512 or 571 on Raspberry Pi kernels 6.6+, 0
 * before); the lowest base wins among several pinctrl chips. Null when there is none.
 * @internal
 */
export function pinctrlBase(chips: readonly GpioChip[]): GpioChip | null {
  return pickPinController([...chips].sort((a, b) => a.base - b.base));
}

/** Reads each gpiochip label and base under a sysfs gpio class directory (normally /sys/class/gpio). @internal */
export function readGpioChips(gpioClassDir: string): GpioChip[] {
  let names: string[];
  try {
    names = readdirSync(gpioClassDir).filter((n) => /^gpiochip\d+$/.test(n));
  } catch (err) {
    throw new DoorAgentError(
      `cannot list ${gpioClassDir}: this machine has no sysfs GPIO (CONFIG_GPIO_SYSFS). Use gpio.driver: simulated to run without hardware.`,
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
      throw new DoorAgentError(`${join(gpioClassDir, name, 'base')} holds ${JSON.stringify(baseText.slice(0, 20))}, not a number: set gpio.chipBase`);
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
