import type * as z from 'zod';
import { longestUnlockRunHours } from '../core/unlockSchedule.js';
import type { doorSchema } from './doorSchema.js';
import { checkRequiredSecureChannel } from './osdpSecurity.js';
import { readersOf } from './doorReaders.js';

/** Every GPIO line a door uses, with the keys (under the door) that name it. */
export function doorPins(door: z.output<typeof doorSchema>): Array<[string[], number]> {
  const lines: Array<[string[], number | undefined]> = [
    [['relay', 'pin'], door.relay.pin],
    [['contact', 'pin'], door.contact?.pin],
    [['exitButton', 'pin'], door.exitButton?.pin],
    [['tamper', 'pin'], door.tamper?.pin],
  ];
  // Each reader's lines (the exit reader's as the entry reader's): its Wiegand pair, its LED and buzzer.
  for (const { key, reader } of readersOf(door)) {
    if (reader.type === 'wiegand') lines.push([[...key, 'd0'], reader.d0], [[...key, 'd1'], reader.d1]);
    if (reader.type !== 'osdp') lines.push([[...key, 'led', 'pin'], reader.led?.pin], [[...key, 'buzzer', 'pin'], reader.buzzer?.pin]);
  }
  return lines.filter((line): line is [string[], number] => line[1] !== undefined);
}

/** The checks across doors (shared pins, readers, buses) and between a door's own keys. */
export function refineDoors(config: { gpio: { driver: string }; doors: Array<z.output<typeof doorSchema>> }, ctx: z.RefinementCtx): void {
  const uuids = new Map<string, number>();
  const resourceIds = new Map<number, number>();
  const pins = new Map<number, string>();
  const readers = new Map<string, number>();
  const osdpBuses = new Map<string, { baudRate: number; door: number; addresses: Map<number, number> }>();
  config.doors.forEach((door, i) => {
    const seenUuid = uuids.get(door.uuid.toLowerCase());
    if (seenUuid !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['doors', i, 'uuid'], message: `same uuid as doors[${seenUuid}]` });
    } else uuids.set(door.uuid.toLowerCase(), i);
    const seenResource = resourceIds.get(door.resourceId);
    if (seenResource !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['doors', i, 'resourceId'],
        message: `same resourceId as doors[${seenResource}]`,
      });
    } else resourceIds.set(door.resourceId, i);
    for (const [where, pin] of doorPins(door)) {
      const owner = pins.get(pin);
      if (owner !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, ...where],
          message: `GPIO ${pin} is already used by ${owner}`,
        });
      } else pins.set(pin, `doors[${i}].${where.join('.')}`);
    }
    if (config.gpio.driver === 'onoff') {
      for (const input of ['contact', 'exitButton', 'tamper'] as const) {
        const setting = door[input];
        if (setting && setting.pull !== 'none') {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, input, 'pull'],
            message: `gpio.driver onoff (sysfs) cannot set a pull-${setting.pull}: use gpio.driver: chardev, or pull: none with a resistor`,
          });
        }
      }
    }
    if (door.reader !== undefined && door.readers !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['doors', i, 'readers'], message: 'give reader (an entry reader alone) or readers, not both' });
    }
    for (const { key, reader } of readersOf(door)) {
      if (config.gpio.driver === 'onoff' && reader.type === 'wiegand') {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, ...key, 'type'],
          message: 'a Wiegand reader needs gpio.driver: chardev (sysfs cannot see its 50 µs pulses)',
        });
      }
      if (reader.type === 'serial' && reader.format === 'rdm6300' && reader.cardFormat !== 'decimal') {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, ...key, 'cardFormat'],
          message: 'an rdm6300 reader sends binary frames whose IDs become decimal numbers: leave cardFormat out',
        });
      }
      if (reader.type === 'osdp') {
        checkRequiredSecureChannel(reader, ['doors', i, ...key], ctx);
        const bus = osdpBuses.get(reader.path);
        if (bus && bus.baudRate !== reader.baudRate) {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, ...key, 'baudRate'],
            message: `the OSDP bus ${reader.path} runs at ${bus.baudRate} for doors[${bus.door}]`,
          });
        }
        const sameAddress = bus?.addresses.get(reader.address);
        if (sameAddress !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, ...key, 'address'],
            message: `OSDP address ${reader.address} on ${reader.path} is already doors[${sameAddress}]`,
          });
        }
        if (!bus) osdpBuses.set(reader.path, { baudRate: reader.baudRate, door: i, addresses: new Map([[reader.address, i]]) });
        else bus.addresses.set(reader.address, i);
        if (readers.has(reader.path)) {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, ...key, 'path'],
            message: `reader ${reader.path} is already used by doors[${readers.get(reader.path)}]`,
          });
        }
      }
      if (reader.type === 'serial' || reader.type === 'keyboard' || reader.type === 'pn532') {
        if (osdpBuses.has(reader.path)) {
          ctx.addIssue({ code: 'custom', path: ['doors', i, ...key, 'path'], message: `${reader.path} is an OSDP bus of another door` });
        }
        const seenReader = readers.get(reader.path);
        if (seenReader !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['doors', i, ...key, 'path'],
            message: `reader ${reader.path} is already used by doors[${seenReader}]`,
          });
        } else readers.set(reader.path, i);
      }
    }
    if (door.firstPersonIn && !door.unlockSchedule) {
      ctx.addIssue({ code: 'custom', path: ['doors', i, 'firstPersonIn'], message: 'needs an unlockSchedule: first-person-in delays the start of its hours' });
    }
    if (door.unlockSchedule && door.maxUnlockSeconds > 0) {
      const hours = longestUnlockRunHours(door.unlockSchedule);
      if (hours * 3600 > door.maxUnlockSeconds) {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, 'maxUnlockSeconds'],
          message:
            hours === Infinity
              ? 'would cut the unlockSchedule, which holds the door unlocked every hour of the week: set 0'
              : `would cut the unlockSchedule, which holds the door unlocked for up to ${hours} h in a row: raise it to ${hours * 3600} or more, or set 0`,
        });
      }
    }
    if (door.maxUnlockSeconds > 0 && door.unlockSeconds > door.maxUnlockSeconds) {
      ctx.addIssue({
        code: 'custom',
        path: ['doors', i, 'unlockSeconds'],
        message: `is longer than maxUnlockSeconds (${door.maxUnlockSeconds})`,
      });
    }
  });
}
