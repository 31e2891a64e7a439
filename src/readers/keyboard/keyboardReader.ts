import type { ReaderOptionsOf } from '../options.js';
import { credentialsFrom, type Reader, type ReaderContext } from '../reader.js';
import { SerialReader } from '../serial/serialReader.js';
import { inputDevicePorts } from './inputDevicePort.js';

/**
 * A keyboard reader (an input device): it types lines as a serial reader sends them, so it is a serial reader on
 * an input-device port, with the same framing and reopening. It has no feedback of its own (no reply line).
 */
export function keyboardReader(options: ReaderOptionsOf<'keyboard'>, context: ReaderContext): Reader {
  const reader = new SerialReader({
    path: options.path,
    cardFormat: options.cardFormat,
    baudRate: 0,
    format: 'lines',
    logger: context.logger,
    clock: context.clock,
    timers: context.timers,
    onFrame: credentialsFrom(options.cardFormat, context),
    onConnectionChange: (connected) => context.events.connection(connected),
    openPort: context.openInputDevice ?? inputDevicePorts(),
  });
  return {
    start: () => reader.start(),
    stop: () => reader.stop(),
    get connected() {
      return reader.connected;
    },
  };
}
