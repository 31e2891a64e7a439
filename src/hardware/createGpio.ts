import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Level } from '../core/relay.js';
import { detectChipBase } from './chipBase.js';
import type { GpioDriver, GpioOptions } from './gpio.js';
import { OnoffGpio, SYSFS_GPIO_DIR } from './onoffGpio.js';
import { SimulatedGpio } from './simulatedGpio.js';

export function createGpioDriver(config: GpioOptions): GpioDriver {
  return config.driver === 'simulated' ? new SimulatedGpio(config.simulatedDir) : new OnoffGpio({ chipBase: config.chipBase });
}

/**
 * The level an output pin has now, read from its value file without claiming the pin (for `status`, another
 * process than the daemon). Null when it cannot be read: not exported yet, no permission, no GPIO here.
 */
export function readOutputLevel(config: GpioOptions, pin: number): Level | null {
  try {
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
