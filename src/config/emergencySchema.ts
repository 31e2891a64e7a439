import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import type { EmergencyOptions } from '../door/options.js';
import { bcmPin, debounce, level, pull, type doorSchema } from './doorSchema.js';
import { doorPins } from './doorChecks.js';
import { findDoor, unknownDoorMessage } from './levels.js';

/**
 * `emergency`: the fire alarm input of the agent (issue 30 item 1; docs/operations.md "Fire alarm input", docs/hardware.md). The fire
 * panel's relay contact in a normally-closed loop to `pin`: closed is normal, open is an alarm, so a cut wire
 * releases too (fail-safe). The defaults fit that wiring on a Pi without setting anything: the contact between the
 * GPIO and GND, the GPIO's pull-up on (`pull: up`), so the open loop reads 1 (`activeLevel: 1`).
 */
export const emergencySchema = z.strictObject({
  pin: bcmPin,
  /** The same relay's normally-open contact (form C), wired alike: tells a cut wire or a short from an alarm. */
  confirmPin: bcmPin.optional(),
  /** The level of `pin` that means alarm (its loop open). */
  activeLevel: level.default(1),
  // A loop with nothing pulling it reads whatever it picks up when the wire is cut: pulled up by default.
  pull: pull.default('up'),
  debounceMs: debounce,
  /** The doors it releases, by name, uuid or resourceId; absent: every door. A door left out stays as it is. */
  doors: z
    .array(z.union([z.string().min(1), wholeNumber().min(0)]))
    .min(1, 'list at least one door, or leave doors out for every door')
    .optional(),
});

type Emergency = z.output<typeof emergencySchema>;
type Door = z.output<typeof doorSchema>;

/**
 * The checks across keys: each of `emergency.doors` is a door of this agent; `pin` and `confirmPin` are nobody
 * else's GPIO (a relay, a contact, a button, a reader line) nor each other's; sysfs cannot set a pull.
 */
export function refineEmergency(config: { gpio: { driver: string }; doors: Door[]; emergency?: Emergency | undefined }, ctx: z.RefinementCtx): void {
  const { emergency } = config;
  if (!emergency) return;
  emergency.doors?.forEach((ref, j) => {
    if (!findDoor(config.doors, ref)) ctx.addIssue({ code: 'custom', path: ['emergency', 'doors', j], message: unknownDoorMessage(ref, config.doors) });
  });
  const owners = new Map<number, string>();
  config.doors.forEach((door, i) => {
    for (const [where, pin] of doorPins(door)) if (!owners.has(pin)) owners.set(pin, `doors[${i}].${where.join('.')}`);
  });
  const inputs: Array<['pin' | 'confirmPin', number | undefined]> = [
    ['pin', emergency.pin],
    ['confirmPin', emergency.confirmPin],
  ];
  for (const [key, pin] of inputs) {
    const owner = pin === undefined ? undefined : owners.get(pin);
    if (owner !== undefined) ctx.addIssue({ code: 'custom', path: ['emergency', key], message: `GPIO ${pin} is already used by ${owner}` });
  }
  if (emergency.confirmPin === emergency.pin) {
    ctx.addIssue({
      code: 'custom',
      path: ['emergency', 'confirmPin'],
      message: "is emergency.pin: the confirm input is the relay's other (normally-open) contact, on a GPIO of its own",
    });
  }
  if (config.gpio.driver === 'onoff' && emergency.pull !== 'none') {
    ctx.addIssue({
      code: 'custom',
      path: ['emergency', 'pull'],
      message: `gpio.driver onoff (sysfs) cannot set a pull-${emergency.pull}: use gpio.driver: chardev, or pull: none with a resistor (a loop must not float when its wire is cut)`,
    });
  }
}

/** The options of a validated `emergency` section, and the uuids (lower case) of the doors it releases. */
export function emergencyOptions(config: { doors: Door[]; emergency?: Emergency | undefined }): { options: EmergencyOptions; doors: Set<string> } | null {
  const { emergency } = config;
  if (!emergency) return null;
  const doors = emergency.doors ? emergency.doors.map((ref) => findDoor(config.doors, ref)!) : config.doors;
  return {
    options: {
      pin: emergency.pin,
      confirmPin: emergency.confirmPin ?? null,
      activeLevel: emergency.activeLevel,
      pull: emergency.pull,
      debounceMs: emergency.debounceMs,
    },
    doors: new Set(doors.map((d) => d.uuid.toLowerCase())),
  };
}
