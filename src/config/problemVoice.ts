import * as z from 'zod';
import { isWholeNumber } from '../api/wholeNumber.js';

/**
 * The configuration's problems in the project's own voice: the value given and what was wrong with it
 * (`"twelve" is not a whole number`), never zod's "Invalid input: expected number, received string". Passed as
 * the error map of each parse of a configuration file (config/load.ts), so every key gets it, today's and
 * tomorrow's; a message a schema gives itself (`z.uuid({ error: ... })`, a refine's) still wins. A field described
 * in the schema (`.describe()` on its type, before `.default()` or `.optional()`) adds its description:
 * `doors[0].resourceId: "twelve" is not a whole number (the service's resource id of this door, e.g. 12)`.
 */
export const configProblemVoice: z.core.$ZodErrorMap = (issue) => {
  const said = message(issue);
  if (said === undefined) return undefined;
  const description = descriptionOf(issue.schema ?? issue.inst);
  return description === undefined ? said : `${said} (${description})`;
};

function message(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      // A whole number's "not a number" is "not a whole number"; a fraction's issue expects 'int' (api/wholeNumber.ts).
      const type = issue.expected === 'number' && isWholeNumber(issue.inst) ? 'int' : issue.expected;
      if (issue.input === undefined) return `required: ${expected(type)}`;
      // `key:` with nothing after it is null in YAML.
      if (issue.input === null) return `is empty: it takes ${expected(type)}`;
      return `${shown(issue.input)} is not ${expected(type)}${quoteHint(issue)}`;
    }
    case 'too_small':
      return tooSmall(issue);
    case 'too_big':
      return tooBig(issue);
    case 'invalid_value':
      return `${shown(issue.input)} is not ${oneOf(issue.values)}`;
    case 'invalid_format':
      return `${shown(issue.input)} ${FORMATS[issue.format] ?? `is not a valid ${issue.format}`}`;
    case 'not_multiple_of':
      return `${shown(issue.input)} is not a multiple of ${issue.divisor}`;
    case 'invalid_union': {
      // A discriminated union (gpio.driver, a reader's type): the key that chooses the branch.
      const options: unknown[] = Array.isArray(issue.options) ? issue.options : [];
      if (options.length === 0) return undefined; // the branch that got furthest is reported (util/issues.ts)
      const given = chosen(issue);
      return given === undefined ? `required: ${oneOf(options)}` : `${shown(given)} is not ${oneOf(options)}`;
    }
    default:
      return undefined;
  }
}

const EXPECTED: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  string: 'text',
  boolean: 'true or false',
  array: 'a list',
  tuple: 'a list',
  object: 'a section of keys',
  record: 'a section of keys',
  null: 'empty',
  nonoptional: 'a value',
};

function expected(type: string): string {
  return EXPECTED[type] ?? type;
}

/** A number where text is expected: YAML read it as a number; quotes keep it text. */
function quoteHint(issue: z.core.$ZodRawIssue<z.core.$ZodIssueInvalidType>): string {
  if (issue.expected === 'string' && (typeof issue.input === 'number' || typeof issue.input === 'boolean')) {
    return `: put it in quotes, "${String(issue.input)}"`;
  }
  if (issue.expected === 'boolean' && typeof issue.input === 'string' && /^(yes|no|on|off|y|n)$/i.test(issue.input)) {
    return ': write true or false';
  }
  return '';
}

function tooSmall(issue: z.core.$ZodRawIssue<z.core.$ZodIssueTooSmall>): string {
  const min = Number(issue.minimum);
  const input = issue.input;
  switch (issue.origin) {
    case 'string':
      return input === '' ? 'is empty' : `${shown(input)} is too short: at least ${min} characters`;
    case 'array':
    case 'set':
      return Array.isArray(input) && input.length === 0
        ? `is an empty list: give at least ${min === 1 ? 'one' : min}`
        : `lists ${count(input)}: at least ${min}`;
    default:
      return `${shown(input)} is too small: ${issue.inclusive === false ? 'more than' : 'at least'} ${min}`;
  }
}

function tooBig(issue: z.core.$ZodRawIssue<z.core.$ZodIssueTooBig>): string {
  const max = Number(issue.maximum);
  const input = issue.input;
  switch (issue.origin) {
    case 'string':
      return `is too long (${typeof input === 'string' ? input.length : '?'} characters): at most ${max}`;
    case 'array':
    case 'set':
      return `lists ${count(input)}: at most ${max}`;
    default:
      return `${shown(input)} is too large: ${issue.inclusive === false ? 'less than' : 'at most'} ${max}`;
  }
}

const FORMATS: Record<string, string> = {
  uuid: 'is not a UUID (8-4-4-4-12 hex digits)',
  guid: 'is not a UUID (8-4-4-4-12 hex digits)',
  url: 'is not a URL',
  email: 'is not an e-mail address',
  regex: 'does not have the expected form',
  datetime: 'is not a date and time (YYYY-MM-DDThh:mm:ssZ)',
  date: 'is not a date (YYYY-MM-DD)',
  time: 'is not a time (hh:mm)',
};

/** The discriminator's value of a union's input (`driver: gpiod` in `gpio: { driver: gpiod }`). */
function chosen(issue: z.core.$ZodRawIssue<z.core.$ZodIssueInvalidUnion>): unknown {
  const key = issue.discriminator;
  const input = issue.input;
  return key !== undefined && typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[key] : input;
}

function oneOf(values: ReadonlyArray<unknown>): string {
  const names = values.map((v) => (typeof v === 'string' && /^[\w.-]+$/.test(v) ? v : shown(v)));
  return names.length === 1 ? names[0]! : `one of ${names.join(', ')}`;
}

function count(input: unknown): string {
  const n = Array.isArray(input) ? input.length : input instanceof Set ? input.size : 0;
  return `${n} item${n === 1 ? '' : 's'}`;
}

const MAX_SHOWN = 60;

/** A value as the file gave it: text quoted, a list or a section by what it is when long. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return value.length > MAX_SHOWN ? `${JSON.stringify(value.slice(0, MAX_SHOWN))}...` : JSON.stringify(value);
  if (typeof value !== 'object' || value === null) return String(value);
  const json = JSON.stringify(value);
  if (json !== undefined && json.length <= MAX_SHOWN) return json;
  return Array.isArray(value) ? `a list of ${count(value)}` : 'a section of keys';
}

function descriptionOf(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null || !('_zod' in schema)) return undefined;
  return z.globalRegistry.get(schema as z.core.$ZodType)?.description;
}
