import type * as z from 'zod';
import { problemsFromZod, type Problem } from '../util/issues.js';
import { doorSchema } from './doorSchema.js';
import { refineDoors } from './doorChecks.js';
import { refineReaderFormats, wiegandSchema } from './wiegandFormats.js';
import { gpioSchema } from './schema.js';
import { powerSchema, refineAgentInputs } from './agentInputs.js';
import { emergencySchema, refineEmergency } from './emergencySchema.js';
import { areasSchema, interlocksSchema, refineDoorGroups } from './doorGroups.js';

type Door = z.output<typeof doorSchema>;

/** The doors of a file that does not validate as a whole, each parsed alone: those that validate, with their index. */
export function doorsParsedAlone(raw: Record<string, unknown> | undefined): Array<{ index: number; door: Door }> {
  const doors = Array.isArray(raw?.doors) ? (raw.doors as unknown[]) : [];
  return doors.flatMap((d, index) => {
    const parsed = doorSchema.safeParse(d);
    return parsed.success ? [{ index, door: parsed.data }] : [];
  });
}

/**
 * The checks across keys (shared pins, readers and buses, a door's own keys) on a file whose schema check failed:
 * zod skips them then, so `config check` runs them on the doors that do validate, to report every problem at once.
 */
export function crossKeyProblems(raw: Record<string, unknown> | undefined): Problem[] {
  const doors = doorsParsedAlone(raw);
  if (doors.length === 0) return [];
  const gpio = gpioSchema.safeParse(raw?.gpio ?? { driver: 'onoff' });
  const issues: z.core.$ZodIssue[] = [];
  const ctx = { addIssue: (issue: z.core.$ZodIssue) => void issues.push(issue), value: raw } as unknown as z.RefinementCtx;
  // An unreadable gpio section: its own problem is reported; the checks that depend on the driver are left out.
  const driver = gpio.success ? gpio.data.driver : 'unknown';
  refineDoors({ gpio: { driver }, doors: doors.map((d) => d.door) }, ctx);
  // The readers' formats against the site's (a wiegand section that does not validate reports itself).
  const wiegand = wiegandSchema.safeParse(raw?.wiegand);
  if (wiegand.success) refineReaderFormats({ wiegand: wiegand.data, doors: doors.map((d) => d.door) }, ctx);
  // The agent's own inputs against the doors that validated (a power section that does not validate reports itself).
  const power = raw?.power === undefined ? undefined : powerSchema.safeParse(raw.power);
  // The emergency input against the doors that validated: its pins always; its doors only when every door did.
  const emergency = emergencySchema.safeParse(raw?.emergency);
  if (power?.success) {
    const fire = raw?.emergency !== undefined && emergency.success ? emergency.data : undefined;
    refineAgentInputs({ gpio: { driver }, doors: doors.map((d) => d.door), power: power.data, emergency: fire }, ctx);
  }
  if (raw?.emergency !== undefined && emergency.success) {
    const before = issues.length;
    refineEmergency({ gpio: { driver }, doors: doors.map((d) => d.door), emergency: emergency.data }, ctx);
    const everyDoor = Array.isArray(raw?.doors) && doors.length === raw.doors.length;
    if (!everyDoor) issues.splice(before, issues.length - before, ...issues.slice(before).filter((issue) => issue.path[1] !== 'doors'));
  }
  // Areas and interlocks (each section when it validates) against the doors, only when every door validated: which
  // doors have which readers decides most of their problems.
  const areas = areasSchema.safeParse(raw?.areas);
  const interlocks = interlocksSchema.safeParse(raw?.interlocks);
  if (Array.isArray(raw?.doors) && doors.length === raw.doors.length && (areas.success || interlocks.success)) {
    refineDoorGroups({ doors: doors.map((d) => d.door), areas: areas.success ? areas.data : [], interlocks: interlocks.success ? interlocks.data : [] }, ctx);
  }
  // Indices among the doors that validated, back to the file's own.
  const original = (i: number) => doors[i]?.index ?? i;
  return problemsFromZod(
    issues.map((issue) => ({
      ...issue,
      path: issue.path.map((p, k) => (k === 1 && issue.path[0] === 'doors' && typeof p === 'number' ? original(p) : p)),
      message: issue.message.replace(/doors\[(\d+)\]/g, (_m, i: string) => `doors[${original(Number(i))}]`),
    })),
  );
}
