/**
 * The floor of the Wiegand tap-to-relay benchmark: a bare reader of a FIFO (as the simulated chip's edges come
 * in) that flips a value file, in place, each time a whole 26-bit frame's records have arrived. No decoding, no
 * frame gap, no decision, no database.
 *   node dist/bench/floorFifo.js FIFO VALUE_FILE
 */
import { constants, openSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';

const FRAME_BYTES = 52 * 48; // a 26-bit frame: 52 edges of 48 bytes
const [fifo, valueFile] = process.argv.slice(2);
if (!fifo || !valueFile) throw new Error('usage: floorFifo.js FIFO VALUE_FILE');
const value = openSync(valueFile, 'r+');
let level = 0;
let pending = 0;
const socket = new Socket({ fd: openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK), readable: true, writable: false });
socket.on('data', (chunk: Buffer) => {
  pending += chunk.length;
  while (pending >= FRAME_BYTES) {
    pending -= FRAME_BYTES;
    level = 1 - level;
    writeSync(value, level === 1 ? '1\n' : '0\n', 0);
  }
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => process.exit(0));
