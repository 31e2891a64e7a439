import { badScim, type ScimError } from './scimErrors.js';

/**
 * SCIM's attribute paths and filters (RFC 7644 section 3.4.2.2, 3.5.2), the small part of them identity providers
 * send: `attr eq value` comparisons joined by `and`, on an attribute, a sub-attribute (`name.givenName`), an
 * extension's attribute (`urn:...:User:employeeNumber`) or a value of a multi-valued one (`emails[type eq "work"]
 * .value`). Anything else (`co`, `sw`, `pr`, `or`, `not`, parentheses) is refused with the reason. Pure: no IO.
 */

/** The value a comparison is made with: a JSON string, number, true, false or null. */
export type ScimValue = string | number | boolean | null;

/** Where an attribute is: its extension schema (absent: the core one), its name, a filter on its values, a sub-attribute. */
export interface ScimPath {
  /** An extension schema's URN as written (`urn:ietf:params:scim:schemas:extension:enterprise:2.0:User`). */
  schema?: string;
  attribute: string;
  /** `emails[type eq "work"]`: the values of a multi-valued attribute that match. */
  filter?: ScimFilter;
  subAttribute?: string;
}

/** `path eq value`. */
export interface ScimComparison {
  path: ScimPath;
  value: ScimValue;
}

/** Comparisons that must all hold (`and`). */
export type ScimFilter = ScimComparison[];

/** A filter or path longer than this is refused before it is read. */
const MAX_LENGTH = 1000;
/** Comparisons in one filter: a provider sends one or two. */
const MAX_COMPARISONS = 20;
const NAME = /^(\$ref|[A-Za-z][A-Za-z0-9_$-]*)$/;
/** The core schemas: an attribute written with their URN is the attribute itself. */
const CORE_SCHEMA = /^urn:ietf:params:scim:schemas:core:2\.0:(User|Group)$/i;

const EXAMPLE = 'userName eq "bjensen"';

/** A path's name in lower case, without its filter: `emails.value`, `urn:...:user:employeenumber` (attribute names are case-blind). */
export function pathName(path: ScimPath): string {
  const name = path.subAttribute === undefined ? path.attribute : `${path.attribute}.${path.subAttribute}`;
  return (path.schema === undefined ? name : `${path.schema}:${name}`).toLowerCase();
}

class Reader {
  private at = 0;

  constructor(
    readonly text: string,
    private readonly fail: (detail: string) => ScimError,
  ) {}

  get done(): boolean {
    return this.at >= this.text.length;
  }

  peek(): string {
    return this.text[this.at] ?? '';
  }

  /** Skips spaces; whether there were any. */
  spaces(): boolean {
    const from = this.at;
    while (this.peek() === ' ') this.at++;
    return this.at > from;
  }

  /** The characters matching `pattern` from here (possibly none). */
  take(pattern: RegExp): string {
    const match = pattern.exec(this.text.slice(this.at));
    if (match === null || match.index !== 0) return '';
    this.at += match[0].length;
    return match[0];
  }

  expect(char: string, what: string): void {
    if (this.peek() !== char) throw this.error(`${what} expected`);
    this.at++;
  }

  /** A refusal of what was read (an operator, a joiner): its words say where. */
  refuse(problem: string): ScimError {
    return this.fail(problem);
  }

  /** A refusal at the place reached: what was expected there. */
  error(problem: string): ScimError {
    const near = this.done ? 'at its end' : `at "${this.text.slice(this.at, this.at + 20)}"`;
    return this.fail(`${problem} ${near}`);
  }
}

/** An attribute path from here: `[urn:...:]attr[.sub]`, with `[filter]` before `.sub` when `valuePaths`. */
function readPath(reader: Reader, valuePaths: boolean): ScimPath {
  const written = reader.take(/^[A-Za-z0-9:._$-]+/);
  if (written === '') throw reader.error('an attribute name expected');
  let schema: string | undefined;
  let rest = written;
  if (/^urn:/i.test(written)) {
    const colon = written.lastIndexOf(':');
    schema = written.slice(0, colon);
    rest = written.slice(colon + 1);
  }
  const [attribute = '', subAttribute, extra] = rest.split('.');
  const path: ScimPath = { attribute };
  if (schema !== undefined && !CORE_SCHEMA.test(schema)) path.schema = schema;
  if (extra !== undefined || !NAME.test(attribute) || (subAttribute !== undefined && !NAME.test(subAttribute))) {
    throw reader.refuse(`"${written}" is not an attribute path (attr, attr.sub or urn:...:attr)`);
  }
  if (subAttribute !== undefined) path.subAttribute = subAttribute;
  if (valuePaths && subAttribute === undefined && reader.peek() === '[') {
    reader.expect('[', '"["');
    path.filter = readComparisons(reader, false);
    reader.expect(']', '"]" closing the filter of the values');
    if (reader.peek() === '.') {
      reader.expect('.', '"."');
      const sub = reader.take(/^[A-Za-z][A-Za-z0-9_$-]*/);
      if (sub === '') throw reader.error('a sub-attribute name expected after "."');
      path.subAttribute = sub;
    }
  }
  return path;
}

/** A comparison value: a JSON string, a number, true, false or null (or a bare word, read as a string). */
function readValue(reader: Reader): ScimValue {
  if (reader.peek() === '"') {
    const quoted = reader.take(/^"(?:[^"\\]|\\.)*"/);
    if (quoted === '') throw reader.error('a string that ends with " expected');
    try {
      return JSON.parse(quoted) as string;
    } catch {
      throw reader.error(`${quoted} is not a JSON string`);
    }
  }
  const word = reader.take(/^[^\s\]]+/);
  if (word === '') throw reader.error('a value expected');
  if (word === 'true' || word === 'false') return word === 'true';
  if (word === 'null') return null;
  if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(word)) return Number(word);
  // A bare word is a string: Entra ID's documentation queries `externalId eq jyoung`.
  return word;
}

/** `path eq value` comparisons joined by `and`, up to the end (or, inside a value path, up to its "]"). */
function readComparisons(reader: Reader, topLevel: boolean): ScimFilter {
  const comparisons: ScimFilter = [];
  for (;;) {
    reader.spaces();
    if (reader.peek() === '(') throw reader.refuse('parentheses are not supported: join comparisons with "and"');
    const path = readPath(reader, topLevel);
    if (!reader.spaces()) throw reader.error('a space and an operator expected');
    const operator = reader.take(/^[A-Za-z]+/);
    if (operator.toLowerCase() !== 'eq') {
      if (operator === '') throw reader.error('an operator expected');
      throw reader.refuse(`the operator ${operator} is not supported (only eq, joined by and: ${EXAMPLE})`);
    }
    // RFC 7644's own examples write `members[value eq\"...\"]`: the space before a quoted value may be missing.
    if (!reader.spaces() && reader.peek() !== '"') throw reader.error('a space and a value expected');
    comparisons.push({ path, value: readValue(reader) });
    if (comparisons.length > MAX_COMPARISONS) throw reader.refuse(`more than ${MAX_COMPARISONS} comparisons`);
    const spaced = reader.spaces();
    if (reader.done || (!topLevel && reader.peek() === ']')) return comparisons;
    const joiner = spaced ? reader.take(/^[A-Za-z]+/) : '';
    if (joiner.toLowerCase() !== 'and') {
      if (joiner === '') throw reader.error('"and" expected');
      throw reader.refuse(`"${joiner}" is not supported (only comparisons joined by and: ${EXAMPLE})`);
    }
    if (!reader.spaces()) throw reader.error('a space expected after "and"');
  }
}

/** A `filter` query parameter; 400 invalidFilter naming what is wrong. */
export function parseScimFilter(text: string): ScimFilter {
  const fail = (detail: string) => badScim('invalidFilter', `the filter ${detail}`);
  if (text.length > MAX_LENGTH) throw fail(`is over ${MAX_LENGTH} characters`);
  if (text.trim() === '') throw fail(`is empty: give one such as ${EXAMPLE}`);
  return readComparisons(new Reader(text.trim(), (detail) => fail(`${JSON.stringify(text)}: ${detail}`)), true);
}

/** A PATCH operation's `path` (or a key of its value object); 400 invalidPath naming what is wrong. */
export function parseScimPath(text: string): ScimPath {
  const fail = (detail: string) => badScim('invalidPath', `the path ${JSON.stringify(text)}: ${detail}`);
  if (text.length > MAX_LENGTH) throw badScim('invalidPath', `a path is over ${MAX_LENGTH} characters`);
  const reader = new Reader(text.trim(), fail);
  const path = readPath(reader, true);
  if (!reader.done) throw reader.error('nothing more expected');
  return path;
}

/** Whether `value` (one value of a multi-valued attribute, or a resource) matches every comparison, case-blind. */
export function matchesFilter(value: unknown, filter: ScimFilter, read: (from: unknown, path: ScimPath) => unknown): boolean {
  return filter.every((c) => {
    const actual = read(value, c.path);
    if (typeof actual === 'string' && typeof c.value === 'string') return actual.toLowerCase() === c.value.toLowerCase();
    return (actual ?? null) === c.value;
  });
}
