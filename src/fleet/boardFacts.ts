import { readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { BoardFacts } from '../api/fleet.js';
import { VERSION } from '../version.js';
import { debianArch } from './update/boardArch.js';

/** The most of each list a board reports (api/fleet.ts, boardFactsSchema). */
const MAX_CHIPS = 64;
const MAX_SERIAL = 256;

/** The names in `dir`, sorted; none when it does not exist or cannot be read. */
function names(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/**
 * What a board reports of itself when it enrols (docs/fleet.md, "Enrolment"), for the operator who adopts it: its
 * host name, door-agent's version, its architecture as Debian names it, Node.js's version, its GPIO chips
 * (/dev/gpiochip*) and the serial devices found (/dev/serial/by-id, /dev/ttyUSB*, ttyACM*, ttyAMA*). `dev` is
 * /dev but for tests.
 */
export function boardFacts(dev = '/dev'): BoardFacts {
  const chips = names(dev)
    .filter((n) => /^gpiochip\d+$/.test(n))
    .map((n) => join(dev, n));
  const byId = names(join(dev, 'serial/by-id')).map((n) => join(dev, 'serial/by-id', n));
  const ttys = names(dev)
    .filter((n) => /^tty(USB|ACM|AMA)\d+$/.test(n))
    .map((n) => join(dev, n));
  return {
    hostname: hostname().slice(0, 253) || 'localhost',
    version: VERSION,
    arch: debianArch(),
    node: process.version.slice(0, 32),
    gpio_chips: chips.slice(0, MAX_CHIPS).map((c) => c.slice(0, 64)),
    serial_devices: [...byId, ...ttys].slice(0, MAX_SERIAL).map((s) => s.slice(0, 256)),
  };
}
