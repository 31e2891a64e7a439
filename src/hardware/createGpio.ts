import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Level } from '../core/relay.js';
import { loadChardevBinding } from './chardev/binding.js';
import { ChardevGpio } from './chardev/chardevGpio.js';
import { detectChipBase } from './chipBase.js';
import type { GpioDriver, GpioOptions } from './gpio.js';
import { OnoffGpio, SYSFS_GPIO_DIR } from './onoffGpio.js';
import { SimulatedGpio } from './simulatedGpio.js';

export function createGpioDriver(config: GpioOptions): GpioDriver {
  switch (config.driver) {
    case 'simulated':
      return new SimulatedGpio(config.simulatedDir);
    case 'onoff':
      return new OnoffGpio({ chipBase: config.chipBase });
    case 'chardev':
      return new ChardevGpio(loadChardevBinding(), config.chip);
  }
}

/**
 * The level an output pin has now, read from its value file without claiming the pin (for `status`, another
 * process than the daemon). Null when it cannot be read: not exported yet, no permission, no GPIO here.
 */
export function readOutputLevel(config: GpioOptions, pin: number): Level | null {
  try {
    // A character-device line belongs to the process holding it: another process cannot read it (the daemon's
    // own status says what it drives).
    if (config.driver === 'chardev') return null;
    const file =
      config.driver === 'simulated'
        ? join(config.simulatedDir, `gpio${pin}`, 'value')
        : join(SYSFS_GPIO_DIR, `gpio${(config.chipBase === 'auto' ? detectChipBase(SYSFS_GPIO_DIR) : config.chipBase) + pin}`, 'value');
    const text = readFileSync(file, 'utf8').trim();
    return text === '1' ? 1 : text === '0' ? 0 : null;
  } catch {
    return null;
  }
}
