import * as z from 'zod';
import { badScim } from './scimErrors.js';
import { matchesFilter, parseScimPath, pathName, type ScimFilter, type ScimPath } from './scimFilter.js';
import { attr, checked, copyJson, deleteAttr, isScimObject, setAttr, withNames, type ScimObject } from './scimObjects.js';

/**
 * PATCH (RFC 7644 section 3.5.2) applied to a resource as a plain object, including the forms Okta and Entra ID send
 * (docs/identity-sources.md, "Users"): an operation with no path whose value holds the attributes (`{"active":
 * false}`, `{"name.givenName": "Kkom"}`, `{"urn:...:User:employeeNumber": "Aklq"}`), `op` in any case ("Replace"),
 * a filtered path (`emails[type eq "work"].value`, `members[value eq "..."]`) and Entra's removal of members by a
 * value list. What the result means for the service is read from it afterwards, as a PUT's body is. Pure: no IO.
 */

const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path?: ScimPath;
  value?: unknown;
}

/** Operations in one request: a provider sends a few; Entra's group pushes send members in batches. */
const MAX_OPERATIONS = 1000;

const operationSchema = z.object({
  op: z
    .string()
    .transform((op) => op.toLowerCase())
    .pipe(z.enum(['add', 'replace', 'remove'], 'expected add, replace or remove')),
  path: z.string().optional(),
  value: z.unknown().optional(),
});
const requestSchema = z.object({
  schemas: z.array(z.string()).refine((s) => s.includes(PATCH_SCHEMA), `must list ${PATCH_SCHEMA}`),
  Operations: z.array(z.unknown()).min(1, 'list at least one operation').max(MAX_OPERATIONS, `at most ${MAX_OPERATIONS} operations`),
});

/** A PATCH request's operations, checked: 400 invalidSyntax (the envelope), invalidPath, or noTarget (a remove without path). */
export function parsePatchRequest(body: unknown): PatchOperation[] {
  if (!isScimObject(body)) throw badScim('invalidSyntax', `a PATCH body is a JSON object with "schemas": ["${PATCH_SCHEMA}"] and "Operations"`);
  const request = checked(requestSchema, withNames(body, ['schemas', 'Operations']), 'invalidSyntax', 'the PATCH request');
  return request.Operations.map((raw, i) => {
    if (!isScimObject(raw)) throw badScim('invalidSyntax', `Operations[${i}] is not an object`);
    const parsed = checked(operationSchema, withNames(raw, ['op', 'path', 'value']), 'invalidSyntax', `Operations[${i}]`);
    const operation: PatchOperation = { op: parsed.op };
    if (parsed.path !== undefined && parsed.path.trim() !== '') operation.path = parseScimPath(parsed.path);
    if (parsed.value !== undefined) operation.value = parsed.value;
    if (operation.op === 'remove' && operation.path === undefined) {
      throw badScim('noTarget', `Operations[${i}]: a remove needs a "path" naming what to remove`);
    }
    if (operation.op !== 'remove' && parsed.value === undefined) throw badScim('invalidValue', `Operations[${i}]: ${operation.op} needs a "value"`);
    if (operation.op !== 'remove' && operation.path === undefined && !isScimObject(parsed.value)) {
      throw badScim('invalidValue', `Operations[${i}]: without a "path", the value is an object of the attributes to ${operation.op}`);
    }
    return operation;
  });
}

/** A schema's URN as one key of a value object, its attributes in an object (`"urn:...:enterprise:2.0:User": {...}`). */
const SCHEMA_URN = /^urn:ietf:params:scim:schemas:(extension|core):\S*:(User|Group)$/i;
const CORE_URN = /^urn:ietf:params:scim:schemas:core:/i;

/** The element read by a value filter: its attribute, or that attribute's sub-attribute. */
function readForFilter(element: unknown, path: ScimPath): unknown {
  const value = attr(element, path.attribute);
  return path.subAttribute === undefined ? value : attr(value, path.subAttribute);
}

const matching = (element: unknown, filter: ScimFilter) => matchesFilter(element, filter, readForFilter);

/**
 * The key under which two values of a multi-valued attribute are the same one: their `value` when they have one
 * (a string compared case-blind), else the whole value. Kept in a Set, a PATCH of thousands of members is linear.
 */
function valueKey(element: unknown): unknown {
  const value = attr(element, 'value');
  if (value === undefined) return `j:${JSON.stringify(element)}`;
  return typeof value === 'string' ? `s:${value.toLowerCase()}` : value;
}

/** `add` of `value` to what is there: values appended to a multi-valued attribute (once), sub-attributes merged, else set. */
function added(existing: unknown, value: unknown): unknown {
  if (Array.isArray(value)) {
    const list = Array.isArray(existing) ? [...existing] : existing === undefined || existing === null ? [] : [existing];
    const there = new Set(list.map(valueKey));
    for (const v of value) {
      const key = valueKey(v);
      if (there.has(key)) continue;
      there.add(key);
      list.push(v);
    }
    return list;
  }
  if (Array.isArray(existing)) return added(existing, [value]);
  return replaced(existing, value);
}

/** `replace`: a complex attribute's given sub-attributes replaced, the others kept; anything else set as given. */
function replaced(existing: unknown, value: unknown): unknown {
  if (isScimObject(existing) && isScimObject(value)) {
    const merged = copyJson(existing);
    for (const [k, v] of Object.entries(value)) setAttr(merged, k, v);
    return merged;
  }
  return value;
}

/** The object an attribute of `path` lives in: the resource, or its extension's object (made when `create`). */
function containerOf(resource: ScimObject, path: ScimPath, create: boolean): ScimObject | undefined {
  if (path.schema === undefined) return resource;
  const existing = attr(resource, path.schema);
  if (isScimObject(existing)) return existing;
  if (!create) return undefined;
  const made: ScimObject = {};
  setAttr(resource, path.schema, made);
  return made;
}

function describe(path: ScimPath): string {
  const name = path.subAttribute === undefined ? path.attribute : `${path.attribute}.${path.subAttribute}`;
  return path.schema === undefined ? name : `${path.schema}:${name}`;
}

/** One operation with a path, on `resource` (changed in place). */
function applyAtPath(resource: ScimObject, op: PatchOperation['op'], path: ScimPath, value: unknown): void {
  const container = containerOf(resource, path, op !== 'remove');
  if (container === undefined) return; // a remove of an extension's attribute the resource does not have
  const existing = attr(container, path.attribute);
  if (path.filter !== undefined) return applyToValues(container, op, path, path.filter, existing, value);
  if (path.subAttribute !== undefined) {
    if (Array.isArray(existing)) {
      throw badScim(
        'invalidPath',
        `${path.attribute} has several values: name the ones to change with a filter (${path.attribute}[type eq "work"].${path.subAttribute})`,
      );
    }
    const parent = isScimObject(existing) ? existing : {};
    if (op === 'remove') deleteAttr(parent, path.subAttribute);
    else setAttr(parent, path.subAttribute, op === 'add' ? added(attr(parent, path.subAttribute), value) : replaced(attr(parent, path.subAttribute), value));
    if (isScimObject(existing) || op !== 'remove') setAttr(container, path.attribute, parent);
    return;
  }
  if (op === 'remove') {
    // Entra's removal of members lists them in the value (without the flag aadOptscim062020): those values go.
    if (Array.isArray(existing) && Array.isArray(value)) {
      const gone = new Set(value.map(valueKey));
      setAttr(
        container,
        path.attribute,
        existing.filter((e) => !gone.has(valueKey(e))),
      );
    } else deleteAttr(container, path.attribute);
    return;
  }
  setAttr(container, path.attribute, op === 'add' ? added(existing, value) : replaced(existing, value));
}

/** An operation on the values of a multi-valued attribute that match `filter` (`emails[type eq "work"].value`). */
function applyToValues(container: ScimObject, op: PatchOperation['op'], path: ScimPath, filter: ScimFilter, existing: unknown, value: unknown): void {
  if (existing !== undefined && existing !== null && !Array.isArray(existing)) {
    throw badScim('invalidPath', `${path.attribute} has one value, not several: a filter in brackets selects values of a multi-valued attribute`);
  }
  const list = [...((existing as unknown[] | null | undefined) ?? [])];
  const hits = list.map((e, i) => (matching(e, filter) ? i : -1)).filter((i) => i >= 0);
  const hit = new Set(hits);
  const sub = path.subAttribute;
  if (op === 'remove') {
    const kept = sub === undefined ? list.filter((_e, i) => !hit.has(i)) : list.map((e, i) => (hit.has(i) && isScimObject(e) ? without(e, sub) : e));
    setAttr(container, path.attribute, kept);
    return;
  }
  if (hits.length === 0) {
    // RFC 7644: a replace whose filter matches no value fails (noTarget); an add makes the value the filter describes.
    if (op === 'replace') throw badScim('noTarget', `no value of ${path.attribute} matches the filter of ${describe(path)}`);
    const made: ScimObject = {};
    for (const c of filter) if (c.path.subAttribute === undefined) setAttr(made, c.path.attribute, c.value);
    if (sub === undefined) list.push(replaced(made, value));
    else {
      setAttr(made, sub, value);
      list.push(made);
    }
  } else {
    for (const i of hits) {
      const element = list[i];
      if (sub === undefined) list[i] = op === 'add' ? replaced(element, value) : value;
      else {
        const copy = isScimObject(element) ? copyJson(element) : {};
        setAttr(copy, sub, value);
        list[i] = copy;
      }
    }
  }
  setAttr(container, path.attribute, list);
}

function without(object: ScimObject, name: string): ScimObject {
  const copy = copyJson(object);
  deleteAttr(copy, name);
  return copy;
}

/** An `add` or `replace` without a path: each attribute of the value object, as if named by a path of its own. */
function applyValueObject(resource: ScimObject, op: 'add' | 'replace', value: ScimObject): void {
  for (const [key, v] of Object.entries(value)) {
    // An extension's attributes as one object under its URN: each of them.
    if (SCHEMA_URN.test(key) && isScimObject(v)) {
      const schema = CORE_URN.test(key) ? {} : { schema: key };
      for (const [sub, subValue] of Object.entries(v)) applyAtPath(resource, op, { ...schema, attribute: sub }, subValue);
      continue;
    }
    applyAtPath(resource, op, parseScimPath(key), v);
  }
}

/** The value a remove of `attr[value eq "..."]` (Okta's removal of a member) names, lower-cased; undefined for another operation. */
function removedByValue(operation: PatchOperation): { attribute: string; value: string } | undefined {
  const path = operation.path;
  if (operation.op !== 'remove' || path === undefined || path.schema !== undefined || path.subAttribute !== undefined) return undefined;
  const only = path.filter?.length === 1 ? path.filter[0]! : undefined;
  if (only === undefined || typeof only.value !== 'string' || pathName(only.path) !== 'value') return undefined;
  return { attribute: path.attribute.toLowerCase(), value: only.value.toLowerCase() };
}

/**
 * Removes by value from index `start` on, all on one multi-valued attribute, applied together: one pass over its
 * values, not one per operation (a provider removes a thousand members so). Returns the index after them; `start`
 * when there is no such run, or the attribute is not a list (the operations then go one by one, as written).
 */
function applyRemovesByValue(resource: ScimObject, operations: readonly PatchOperation[], start: number): number {
  const first = removedByValue(operations[start]!);
  if (first === undefined) return start;
  const existing = attr(resource, operations[start]!.path!.attribute);
  if (!Array.isArray(existing)) return start;
  const gone = new Set<string>();
  let end = start;
  while (end < operations.length) {
    const next = removedByValue(operations[end]!);
    if (next?.attribute !== first.attribute) break;
    gone.add(next.value);
    end++;
  }
  setAttr(
    resource,
    operations[start]!.path!.attribute,
    existing.filter((e) => {
      const value = attr(e, 'value');
      return typeof value !== 'string' || !gone.has(value.toLowerCase());
    }),
  );
  return end;
}

/** `resource` after `operations`, in order (a copy: the given one is not changed). */
export function applyPatch(resource: ScimObject, operations: readonly PatchOperation[]): ScimObject {
  const result = copyJson(resource);
  for (let i = 0; i < operations.length; ) {
    const after = applyRemovesByValue(result, operations, i);
    if (after > i) {
      i = after;
      continue;
    }
    const operation = operations[i++]!;
    if (operation.path === undefined) applyValueObject(result, operation.op as 'add' | 'replace', operation.value as ScimObject);
    else applyAtPath(result, operation.op, operation.path, operation.value);
  }
  return result;
}
