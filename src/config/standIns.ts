import type * as z from 'zod';
import { isFraction } from '../api/wholeNumber.js';

/** Marks a stand-in text: no key of a file holds it, so no check finds it equal to another key's value. */
export const STAND_IN = '\u0000unreadable';

/** A number no key holds (each key's range starts at 0 or above). */
export function standInNumber(n: number): number {
  return -1e12 - n;
}

/** A value zod could read, if out of range or of a wrong form: the checks across keys take it as it is. */
export const KEEP = Symbol('keep');

/**
 * What stands in for a value zod could not read (config/acrossKeys.ts): a value of the type the key expects that
 * equals no other (a negative number, a text nobody writes); a section gets its keys, each a stand-in or its
 * default, so a door that is not a section at all still has a relay pin no other door shares. `n` numbers them.
 */
export function standInFor(issue: z.core.$ZodRawIssue, n: () => number): unknown {
  switch (issue.code) {
    case 'invalid_type':
      if (isFraction(issue)) return KEEP; // 12.5 for a whole number: a number, of the wrong form
      return isSchema(issue.inst) ? standInOf(issue.inst, n, 0) : standInOfType(issue.expected, n);
    case 'invalid_value':
      return `${STAND_IN} ${n()}`;
    case 'invalid_union':
      // A discriminated union's key (gpio.driver, a reader's type) is text; another union has no type to stand in.
      return issue.discriminator !== undefined || typeof issue.input !== 'object' || issue.input === null ? `${STAND_IN} ${n()}` : {};
    default:
      return KEEP; // out of range, a wrong form, a refinement
  }
}

function isSchema(value: unknown): value is z.core.$ZodTypes {
  return typeof value === 'object' && value !== null && '_zod' in value && 'def' in (value as { _zod: object })._zod;
}

const MAX_DEPTH = 8;

function standInOf(schema: z.core.$ZodTypes, n: () => number, depth: number): unknown {
  if (depth > MAX_DEPTH) return undefined;
  const def = schema._zod.def;
  switch (def.type) {
    case 'object': {
      const section: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(def.shape)) {
        const value = standInOf(child as z.core.$ZodTypes, n, depth + 1);
        if (value !== undefined) section[key] = value;
      }
      return section;
    }
    case 'default':
      return def.defaultValue;
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return standInOf(def.innerType as z.core.$ZodTypes, n, depth + 1);
    case 'pipe':
      // z.preprocess is a transform into a schema; .transform() a schema into a transform.
      return standInOf((def.in._zod.def.type === 'transform' ? def.out : def.in) as z.core.$ZodTypes, n, depth + 1);
    case 'optional':
      return undefined; // left out, as the file may leave it out
    case 'nullable':
      return null;
    default:
      return standInOfType(def.type, n);
  }
}

function standInOfType(type: string, n: () => number): unknown {
  switch (type) {
    case 'number':
    case 'int':
      return standInNumber(n());
    case 'string':
    case 'enum':
    case 'literal':
    case 'union':
      return `${STAND_IN} ${n()}`;
    case 'boolean':
      return false;
    case 'array':
    case 'tuple':
      return [];
    case 'object':
    case 'record':
      return {};
    default:
      return undefined;
  }
}
