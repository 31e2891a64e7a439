import type * as z from 'zod';
import { problemsFromZod } from '../../../util/issues.js';
import { badScim, type ScimType } from './scimErrors.js';

/**
 * SCIM resources as plain JSON objects, read and written by attribute name: SCIM's attribute names are case-blind
 * (RFC 7643 section 2.1), so `userName`, `username` and `UserName` are one attribute. Pure: no IO.
 */

export type ScimObject = Record<string, unknown>;

export const isScimObject = (value: unknown): value is ScimObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The key of `object` that names `name`, in any case; undefined when there is none. */
function keyOf(object: ScimObject, name: string): string | undefined {
  if (Object.hasOwn(object, name)) return name;
  const lower = name.toLowerCase();
  return Object.keys(object).find((k) => k.toLowerCase() === lower);
}

/** The value of attribute `name` of `object` (any case); undefined when absent or when `object` is not an object. */
export function attr(object: unknown, name: string): unknown {
  if (!isScimObject(object)) return undefined;
  const key = keyOf(object, name);
  return key === undefined ? undefined : object[key];
}

/** Sets attribute `name`, under the key it already has when it has one (a field set as data, never a prototype). */
export function setAttr(object: ScimObject, name: string, value: unknown): void {
  Object.defineProperty(object, keyOf(object, name) ?? name, { value, enumerable: true, writable: true, configurable: true });
}

export function deleteAttr(object: ScimObject, name: string): void {
  const key = keyOf(object, name);
  if (key !== undefined) delete object[key];
}

/** A copy of `object` whose keys naming one of `names` (any case) are spelt as there: for a zod schema to read. */
export function withNames(object: ScimObject, names: readonly string[]): ScimObject {
  const out: ScimObject = {};
  for (const [key, value] of Object.entries(object)) setAttr(out, names.find((n) => n.toLowerCase() === key.toLowerCase()) ?? key, value);
  return out;
}

/** `value` checked by `schema`; a problem is a 400 of `scimType` naming where it is. */
export function checked<T extends z.ZodType>(schema: T, value: unknown, scimType: ScimType, what: string): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) {
    const problems = problemsFromZod(result.error.issues).map((p) => (p.path === '(top level)' ? p.message : `${p.path}: ${p.message}`));
    throw badScim(scimType, `${what}: ${problems.join('; ')}`);
  }
  return result.data;
}

/** A deep copy of a JSON value (a resource about to be patched). */
export const copyJson = <T>(value: T): T => structuredClone(value);
