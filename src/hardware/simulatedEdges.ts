import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { WiegandEdge } from '../core/wiegand.js';
import { encodeLineEvent } from './chardev/lineEvents.js';
import { SIMULATED_EDGES_FIFO } from './simulatedGpio.js';

/**
 * Puts edges on the simulated chip, as a Wiegand reader on `d0`/`d1` would: the kernel's records written into
 * `<simulatedDir>/edges` (the agent must be running: it holds the FIFO open). `edges` times are µs relative to
 * `startUs` on CLOCK_MONOTONIC (default: the frame ended just now). For the tests, the bench and a bench setup.
 */
export function writeSimulatedEdges(
  simulatedDir: string,
  pins: { d0: number; d1: number },
  edges: readonly WiegandEdge[],
  startUs?: number,
): { lastEdgeUs: number } {
  const last = Math.max(...edges.map((e) => e.atUs));
  const start = startUs ?? Number(process.hrtime.bigint() / 1000n) - last;
  const records = edges.map((e, i) =>
    encodeLineEvent({
      offset: e.line === 'd0' ? pins.d0 : pins.d1,
      rising: e.rising,
      timestampNs: BigInt(Math.round((start + e.atUs) * 1000)),
      seqno: i + 1,
    }),
  );
  // Non-blocking: with nobody reading (no agent), opening fails (ENXIO) instead of hanging.
  const fd = openSync(join(simulatedDir, SIMULATED_EDGES_FIFO), constants.O_WRONLY | constants.O_NONBLOCK);
  try {
    // A pipe takes up to 4 KiB (PIPE_BUF) in one piece (a 37-bit frame's 74 records are 3.5 KiB); more is
    // written in parts, each whole or refused, so the reader never loses its place in the 48-byte records.
    const bytes = Buffer.concat(records);
    for (let at = 0; at < bytes.length; ) {
      try {
        at += writeSync(fd, bytes, at, Math.min(4096 - (4096 % 48), bytes.length - at));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1); // the agent is behind: wait 1 ms
      }
    }
  } finally {
    closeSync(fd);
  }
  return { lastEdgeUs: start + last };
}
