import { setFlagsFromString } from 'node:v8';

/**
 * V8's interrupt budget for the daemon: how much bytecode a function runs between V8's checks of whether to
 * optimize it (V8's own default is 132 KB). A tap runs the door's decision path once, and taps come seconds or
 * hours apart: under the default budget those functions never leave V8's baseline tier, however long the daemon
 * runs. At this budget they are optimized after some dozens of taps, and the tap path is shorter on the CPU's
 * cold caches (bench/HISTORY.md, "The tap path": card line to relay 1.43-1.52x its floor at p50 before,
 * 1.17-1.34x after).
 */
const DAEMON_INTERRUPT_BUDGET = 4096;

/**
 * Gives the daemon's process V8's tiering for a tap path (above). Set at run time, not on node's command line: a
 * V8 flag is not allowed in NODE_OPTIONS, and `door-agent run` is started in more ways than the unit's. It takes
 * effect for every function V8 checks from then on. A V8 without the flag prints a warning and runs as before.
 */
export function tuneTieringForTaps(): void {
  setFlagsFromString(`--interrupt-budget=${DAEMON_INTERRUPT_BUDGET}`);
}
