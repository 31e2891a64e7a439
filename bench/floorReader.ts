/**
 * The floor of the tap-to-relay benchmark: a bare serialport reader on a pty that, for every line it receives,
 * flips a value file the way the simulated relay is written (in place). No decision, no database.
 *   node dist/bench/floorReader.js DEVICE VALUE_FILE
 */
import { openSync, writeSync } from 'node:fs';
import { ReadlineParser, SerialPort } from 'serialport';

const [device, valueFile] = process.argv.slice(2);
if (!device || !valueFile) throw new Error('usage: floorReader.js DEVICE VALUE_FILE');
const fd = openSync(valueFile, 'r+');
let level = 0;
const port = new SerialPort({ path: device, baudRate: 9600 });
port.pipe(new ReadlineParser({ delimiter: '\r\n' })).on('data', () => {
  level = 1 - level;
  writeSync(fd, level === 1 ? '1\n' : '0\n', 0);
});
port.on('open', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => port.close(() => process.exit(0)));
