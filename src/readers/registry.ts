import { keyboardReader } from './keyboard/keyboardReader.js';
import { readerCardFormat, type ReaderOptions, type ReaderOptionsOf, type ReaderType } from './options.js';
import { OsdpDoorReader } from './osdp/osdpDoorReader.js';
import { Pn532Reader } from './pn532/pn532Reader.js';
import type { NoiseSummary } from './noiseReporter.js';
import { credentialsFrom, type Reader, type ReaderContext } from './reader.js';
import { SerialReader } from './serial/serialReader.js';
import { WiegandReader } from './wiegand/wiegandReader.js';

type ReaderFactory<T extends ReaderType> = (options: ReaderOptionsOf<T>, context: ReaderContext) => Reader;

/** What every reader built on a frame parser hands its driver: credentials normalized once, its connection. */
const sinks = (options: ReaderOptions, context: ReaderContext) => ({
  logger: context.logger,
  clock: context.clock,
  timers: context.timers,
  onFrame: credentialsFrom(readerCardFormat({ reader: options }), context),
  onConnectionChange: (connected: boolean) => context.events.connection(connected),
});

/** One line per reader type (`doors[].reader.type`): how it is made. @internal */
export const READERS: { [T in ReaderType]: ReaderFactory<T> } = {
  serial: (o, c) => new SerialReader(Object.assign({}, o, sinks(o, c), { openPort: c.openPort })),
  keyboard: (o, c) => keyboardReader(o, c),
  wiegand: (o, c) => new WiegandReader(Object.assign({}, o, sinks(o, c), { gpio: c.gpio, onNoise: (summary: NoiseSummary) => c.events.noise?.(summary) })),
  osdp: (o, c) => new OsdpDoorReader(o, c),
  pn532: (o, c) => new Pn532Reader(o, c),
};

/** The reader a door's options describe. */
export function createReader(options: ReaderOptions, context: ReaderContext): Reader {
  const factory = READERS[options.type] as ReaderFactory<ReaderType>;
  return factory(options, context);
}
