import type { GpioConfig } from '../config/schema.js';
import type { GpioDriver } from './gpio.js';
import { OnoffGpio } from './onoffGpio.js';
import { SimulatedGpio } from './simulatedGpio.js';

export function createGpioDriver(config: GpioConfig): GpioDriver {
  return config.driver === 'simulated' ? new SimulatedGpio(config.simulatedDir) : new OnoffGpio({ chipBase: config.chipBase });
}
