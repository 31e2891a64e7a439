import { parse as parseYaml } from 'yaml';
import { relayLevel, type Level } from '../core/relay.js';
import type { GpioOptions } from '../hardware/gpio.js';
import type * as z from 'zod';
import { gpioSchema } from './schema.js';
import { readConfigText } from './configText.js';
import { doorSchema } from './doorSchema.js';

/** A relay to drive locked, read from a configuration that may not validate as a whole. */
export interface RelayTarget {
  label: string;
  pin: number;
  level: Level;
}

export interface LenientRelays {
  /** Null when the gpio section is there but unreadable: then no relay is driven (a guessed driver or chip could drive another line). */
  gpio: GpioOptions | null;
  relays: RelayTarget[];
  /** Doors whose relay could not be read, with why. */
  skipped: string[];
}

/** The file as plain data when it is readable YAML at all; undefined otherwise. */
export function readRawConfig(path: string): Record<string, unknown> | undefined {
  try {
    const data: unknown = parseYaml(readConfigText(path), { maxAliasCount: 100 });
    return typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every relay whose pin, fail mode and polarity can be read from a configuration that does not validate
 * (a typo elsewhere must not stop `door-agent relock` from locking the doors it can). A relay whose locked
 * level is ambiguous (an unreadable failMode or activeLow) is skipped and named.
 */
export function relaysFromInvalidConfig(raw: Record<string, unknown> | undefined): LenientRelays {
  const gpioParsed = gpioSchema.safeParse(raw?.gpio ?? { driver: 'onoff' });
  if (!gpioParsed.success) {
    const reason = 'the gpio section cannot be read, so no relay is driven: a guessed driver or chip could energize a line that is not a relay';
    return { gpio: null, relays: [], skipped: [reason] };
  }
  const gpio: GpioOptions = gpioParsed.data;
  const relays: RelayTarget[] = [];
  const skipped: string[] = [];
  const doors = Array.isArray(raw?.doors) ? (raw.doors as unknown[]) : [];
  doors.forEach((door, i) => {
    const d = (typeof door === 'object' && door !== null ? door : {}) as Record<string, unknown>;
    const relay = (typeof d.relay === 'object' && d.relay !== null ? d.relay : {}) as Record<string, unknown>;
    const label = typeof d.name === 'string' ? `${d.name} (doors[${i}])` : `doors[${i}]`;
    const pin = relay.pin;
    const failMode = d.failMode ?? 'secure';
    const activeLow = relay.activeLow ?? false;
    if (typeof pin !== 'number' || !Number.isInteger(pin) || pin < 0 || pin > 63) {
      skipped.push(`${label}: relay.pin is not a BCM pin number`);
      return;
    }
    if (failMode !== 'secure' && failMode !== 'safe') {
      skipped.push(`${label}: failMode is neither secure nor safe, so its locked level is unknown`);
      return;
    }
    if (typeof activeLow !== 'boolean') {
      skipped.push(`${label}: relay.activeLow is not true or false, so its locked level is unknown`);
      return;
    }
    relays.push({ label, pin, level: relayLevel('LOCKED', failMode, activeLow) });
  });
  return { gpio, relays, skipped };
}

/** agent.dataDir of a configuration that may not validate: its default when absent, undefined when unreadable. */
export function dataDirFromInvalidConfig(raw: Record<string, unknown> | undefined, fallback: string): string | undefined {
  const agent = raw?.agent;
  if (agent === undefined) return fallback;
  if (typeof agent !== 'object' || agent === null) return undefined;
  const dataDir = (agent as Record<string, unknown>).dataDir;
  if (dataDir === undefined) return fallback;
  return typeof dataDir === 'string' && dataDir.length > 0 ? dataDir : undefined;
}

/** The doors of a file that does not validate as a whole, each parsed alone: those that validate, with their index. */
export function doorsParsedAlone(raw: Record<string, unknown> | undefined): Array<{ index: number; door: z.output<typeof doorSchema> }> {
  const doors = Array.isArray(raw?.doors) ? (raw.doors as unknown[]) : [];
  return doors.flatMap((d, index) => {
    const parsed = doorSchema.safeParse(d);
    return parsed.success ? [{ index, door: parsed.data }] : [];
  });
}
