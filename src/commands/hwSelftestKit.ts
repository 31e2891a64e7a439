/**
 * What scripts/hw-selftest.sh drives the hardware with: door-agent's own configuration loader, GPIO drivers and
 * readers, as one entry of the installed bundle (dist/cli/hw-selftest-kit.js, scripts/bundle.mjs). An installed
 * tree has the bundle alone (no tsc output), so the script imports this and nothing else of door-agent's.
 * @public
 */
export { pino } from 'pino';
export { loadConfig } from '../config/load.js';
export { createGpioDriver } from '../hardware/createGpio.js';
export { relayLevel } from '../core/relay.js';
export { credentialHint, normalizeCredential } from '../core/credentials.js';
export { SerialReader } from '../readers/serial/serialReader.js';
export { WiegandReader } from '../readers/wiegand/wiegandReader.js';
export { Pn532Reader } from '../readers/pn532/pn532Reader.js';
export { OsdpBuses } from '../readers/osdp/osdpBuses.js';
export { inputDevicePorts } from '../readers/keyboard/inputDevicePort.js';
export { ReaderSignals } from '../readers/readerFeedback.js';
export { describeReader, readerCardFormat } from '../readers/options.js';
export { readScbk } from '../util/secretFiles.js';
export { systemClock, systemTimers } from '../util/clock.js';
