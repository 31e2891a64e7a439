import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { bcmPin, level, type doorSchema } from './doorSchema.js';
import { doorPins } from './doorChecks.js';

/**
 * The agent's power inputs (docs/operations.md, "Supervision"): a UPS's or power supply's mains-present ("power good") line and
 * battery-low line, each optional. Power lines dip: a change counts once it has held for debounceMs (default 1 s).
 */
export const powerSchema = z
  .strictObject({
    mainsPin: bcmPin.optional(),
    /** The level of mainsPin while mains power is present. */
    mainsPresentLevel: level.default(1),
    batteryLowPin: bcmPin.optional(),
    /** The level of batteryLowPin while the battery is low. */
    batteryLowLevel: level.default(1),
    debounceMs: wholeNumber().min(0).max(60_000).default(1000),
    pull: z.enum(['up', 'down', 'none']).default('none'),
  })
  .refine((p) => p.mainsPin !== undefined || p.batteryLowPin !== undefined, { message: 'set mainsPin, batteryLowPin or both' });

type Power = z.output<typeof powerSchema>;

/**
 * The agent's own inputs, beside the doors': each line here is one input with its key. A new agent-level input
 * (another section) adds its line, and the checks below cover it.
 */
function agentInputPins(config: { power?: Power }): Array<[string[], number | undefined]> {
  return [
    [['power', 'mainsPin'], config.power?.mainsPin],
    [['power', 'batteryLowPin'], config.power?.batteryLowPin],
  ];
}

/**
 * The agent's inputs against the doors' lines and each other: a pin used twice is an error naming the key (a
 * relay's line read as an input would report its own level). With sysfs (onoff), no pull can be set.
 */
export function refineAgentInputs(
  config: { gpio: { driver: string }; doors: Array<z.output<typeof doorSchema>>; power?: Power; emergency?: { pin: number; confirmPin?: number } },
  ctx: z.RefinementCtx,
): void {
  const used = new Map<number, string>();
  config.doors.forEach((door, i) => {
    for (const [where, pin] of doorPins(door)) if (pin !== undefined && !used.has(pin)) used.set(pin, `doors[${i}].${where.join('.')}`);
  });
  // The fire alarm input's lines (checked against the doors by config/emergencySchema.ts): taken, not reported again.
  for (const [key, pin] of [
    ['pin', config.emergency?.pin],
    ['confirmPin', config.emergency?.confirmPin],
  ] as const) {
    if (pin !== undefined && !used.has(pin)) used.set(pin, `emergency.${key}`);
  }
  for (const [path, pin] of agentInputPins(config)) {
    if (pin === undefined) continue;
    const owner = used.get(pin);
    if (owner !== undefined) ctx.addIssue({ code: 'custom', path, message: `GPIO ${pin} is already used by ${owner}` });
    else used.set(pin, path.join('.'));
  }
  if (config.gpio.driver === 'onoff' && config.power && config.power.pull !== 'none') {
    ctx.addIssue({
      code: 'custom',
      path: ['power', 'pull'],
      message: `gpio.driver onoff (sysfs) cannot set a pull-${config.power.pull}: use gpio.driver: chardev, or pull: none with a resistor`,
    });
  }
}
