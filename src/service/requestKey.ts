import type { FastifyRequest } from 'fastify';
import { BadRequest } from './params.js';

/**
 * Where a request carries its API key. The API document names `api_key` as a form parameter of one call and
 * leaves every other parameter's place open, so the key is taken from the `Authorization: Bearer` header, the
 * `X-API-Key` header, `api_key` in the query string, or `api_key` in a JSON or form body of any call
 * (docs/reference-service.md, "API keys"). Given in several places, they must agree.
 */

export interface GivenKey {
  /** Where it came from, as a person would say it. */
  place: string;
  key: string;
}

/** The keys of the headers and the query string: what can be checked before a body is read. */
export function keysBeforeBody(request: FastifyRequest): GivenKey[] {
  const given: GivenKey[] = [];
  // The scheme is case-insensitive (RFC 9110), and spaces after it are tolerated.
  const bearer = /^bearer[ \t]+(.*)$/is.exec(request.headers.authorization ?? '');
  if (bearer) given.push({ place: 'the Authorization header', key: bearer[1]!.trim() });
  const header = request.headers['x-api-key'];
  if (typeof header === 'string') given.push({ place: 'the X-API-Key header', key: header });
  const fromQuery = (request.query as Record<string, unknown> | undefined)?.api_key;
  for (const key of [fromQuery].flat()) if (typeof key === 'string') given.push({ place: 'api_key in the query string', key });
  return given;
}

/**
 * Why no key was found, when an Authorization header was sent in another form than `Bearer <key>` (Basic, a bare
 * key): the header the caller meant to carry the key, said plainly rather than "an API key is required".
 */
export function authorizationProblem(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined || /^bearer[ \t]/i.test(header)) return undefined;
  return 'the Authorization header must be "Bearer <key>"';
}

/** The key of a parsed body (JSON object or form), if it has one. */
export function bodyKey(body: unknown): GivenKey[] {
  const key = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).api_key : undefined;
  return typeof key === 'string' ? [{ place: 'api_key in the body', key }] : [];
}

/** The one key given, or undefined; keys that differ are refused (400) naming where each came from. */
export function oneKey(given: GivenKey[]): string | undefined {
  const first = given[0];
  const other = given.find((g) => g.key !== first?.key);
  if (first && other) {
    throw new BadRequest(`two API keys that differ, in ${first.place} and in ${other.place}: send one key, in one place`);
  }
  return first?.key;
}

/** A body whose type may hold `api_key` (the two the service parses). */
export function bodyKind(contentType: string | undefined): 'json' | 'form' | null {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json' ? 'json' : type === 'application/x-www-form-urlencoded' ? 'form' : null;
}

/** A form field's name or value, decoded leniently (the full parse refuses what is not UTF-8 later). */
function formText(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return undefined;
  }
}

/**
 * `api_key` among the fields of a form's first bytes that end within them (unless `complete`, a field cut off at
 * the end is not read: its value may go on); the last one wins, as in the full parse.
 */
function formPrefixKey(text: string, complete: boolean): string | undefined {
  const whole = complete ? text : text.slice(0, text.lastIndexOf('&') + 1);
  let key: string | undefined;
  for (const pair of whole.split('&')) {
    const equals = pair.indexOf('=');
    if (equals > 0 && formText(pair.slice(0, equals)) === 'api_key') key = formText(pair.slice(equals + 1));
  }
  return key;
}

/** The end (index after the closing quote) of the JSON string starting at `start`, or -1 if it is cut off. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i + 1;
  }
  return -1;
}

/** `api_key` of the top-level object in a JSON body's first bytes, when its key and value string end within them. */
function jsonPrefixKey(text: string): string | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x22) {
      const end = stringEnd(text, i);
      if (end < 0) return undefined;
      const colon = /^\s*:\s*/.exec(text.slice(end, end + 64));
      if (depth === 1 && colon && text.slice(i, end) === '"api_key"' && text[end + colon[0].length] === '"') {
        const valueStart = end + colon[0].length;
        const valueEnd = stringEnd(text, valueStart);
        if (valueEnd < 0) return undefined;
        try {
          return JSON.parse(text.slice(valueStart, valueEnd)) as string;
        } catch {
          return undefined;
        }
      }
      i = end - 1;
    }
  }
  return undefined;
}

/**
 * `api_key` in the first bytes of a body over the pre-authentication limit, or in a whole body (`complete`) that
 * does not parse.
 */
export function keyInBodyPrefix(prefix: Buffer, kind: 'json' | 'form', complete: boolean): GivenKey[] {
  const text = prefix.toString('utf8');
  const key = kind === 'json' ? jsonPrefixKey(text) : formPrefixKey(text, complete);
  return key === undefined ? [] : [{ place: 'api_key in the body', key }];
}
