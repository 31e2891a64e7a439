import { STATUS_CODES, maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import { BadRequest } from './params.js';
import { checkJsonDepth } from './requestLimits.js';

/**
 * The service's HTTP layer below the routes (issue 15): the errors Node's HTTP parser raises before fastify sees a
 * request, and the request bodies, read from their raw bytes. Every error has the API's one shape,
 * `{"error": message}`, with a message saying what the client should change.
 */

export function errorBody(message: string): { error: string } {
  return { error: message };
}

type ParserError = Error & { code?: string; reason?: string };

/** The status and message for an error of Node's HTTP parser (llhttp's codes). */
function parserProblem(err: ParserError): { status: number; message: string } {
  const reason = err.reason ?? err.message;
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: `request headers over ${maxHeaderSize} bytes: send fewer or shorter headers` };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'the request did not arrive in full in time: send it again' };
    case 'HPE_INVALID_METHOD':
    case 'HPE_INVALID_URL':
    case 'HPE_INVALID_VERSION':
    case 'HPE_INVALID_CONSTANT':
      return {
        status: 400,
        message: `the request line is not valid HTTP (${reason}): send "METHOD /path?query HTTP/1.1", the path and query percent-encoded`,
      };
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      if (/Transfer-Encoding/i.test(reason) && /Content-Length/i.test(reason)) {
        return { status: 400, message: 'the request has both Transfer-Encoding and Content-Length: send only one of them' };
      }
      return {
        status: 400,
        message: `the request's body length is not valid HTTP (${reason}): send one Content-Length with the body's size in bytes, or Transfer-Encoding: chunked`,
      };
    case 'HPE_INVALID_HEADER_TOKEN':
      return { status: 400, message: `a header name or value holds a character HTTP does not allow (${reason})` };
    case 'HPE_INVALID_EOF_STATE':
      // The client ended its side of the connection part way through the body (an upload cut short).
      return { status: 400, message: 'the request ended before its body did (fewer bytes than its Content-Length or chunks said): nothing of it was used' };
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 400, message: `the chunked request body is malformed (${reason})` };
    default:
      return { status: 400, message: `the request is not valid HTTP (${reason})` };
  }
}

const answered = new WeakSet<Socket>();

/**
 * The HTTP server's 'clientError' (fastify's `clientErrorHandler`): a request Node's parser refused, before or
 * while fastify had it. Answered once per connection, as Node itself does (unless a response has started, then
 * the connection is only closed), with `Connection: close`; what the client still sends is read and dropped for
 * a second (closing with unread input would reset the connection and could lose the answer).
 */
export function answerClientError(err: ParserError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  answered.add(socket);
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { status, message } = parserProblem(err);
  const body = JSON.stringify(errorBody(message));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  const timer = setTimeout(() => socket.destroy(), 1000).unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * For a response with `Connection: close` to a request whose body is still arriving (refused before it was read):
 * instead of Node's close right after the answer (with the body still coming, that close resets the connection
 * and the client may lose the answer) or its reading the rest to drop it (all 50 MB of an upload), the connection
 * stops reading, sends the answer and its FIN, and is destroyed `lingerMs` later. The client has read the answer
 * by then; what it still sends waits in the kernel's buffers, unread.
 */
export function closeWithoutReading(socket: Socket, lingerMs = 1000): void {
  socket.destroySoon = function lingering(this: Socket) {
    // Node's HTTP server keeps a socket marked _paused from resuming (its own flag for "read no more").
    (this as Socket & { _paused?: boolean })._paused = true;
    this.pause();
    this.end();
    const timer = setTimeout(() => this.destroy(), lingerMs).unref();
    this.once('close', () => clearTimeout(timer));
  };
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as text; bytes that are not UTF-8 are refused rather than read as U+FFFD. */
function bodyText(body: Buffer): string {
  try {
    return strictUtf8.decode(body);
  } catch {
    throw new BadRequest('request body is not valid UTF-8');
  }
}

const LONE_SURROGATE = /\p{Cs}/u;
// Only bodies holding one of these need the (slower) check of every key and string.
const SUSPECT_JSON = /__proto__|constructor|\\u/;

function checkedJsonValue(key: string, value: unknown): unknown {
  if (key === '__proto__') {
    throw new BadRequest('request body: the JSON key "__proto__" is not accepted (it could change object prototypes): remove or rename it');
  }
  if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) {
    throw new BadRequest(
      'request body: the JSON key "constructor" (with a "prototype") is not accepted (it could change object prototypes): remove or rename it',
    );
  }
  if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
    throw new BadRequest('request body is not valid UTF-8: a JSON string holds an unpaired surrogate escape (\\ud800 to \\udfff)');
  }
  return value;
}

/** An application/json body: UTF-8, valid JSON, no key that could change prototypes. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) {
    throw new BadRequest('request body is empty but Content-Type is application/json: send a JSON object, or no Content-Type');
  }
  const text = bodyText(body);
  checkJsonDepth(text, 'request body');
  try {
    return SUSPECT_JSON.test(text) ? (JSON.parse(text, checkedJsonValue) as unknown) : (JSON.parse(text) as unknown);
  } catch (err) {
    if (err instanceof BadRequest) throw err;
    throw new BadRequest(`request body is not valid JSON (${(err as Error).message})`);
  }
}

/** One name or value of a form: `+` is a space, %XX runs are UTF-8 (refused otherwise), a stray `%` stays. */
function formComponent(raw: string, what: string): string {
  const text = raw.replaceAll('+', ' ');
  if (!text.includes('%')) return text;
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      const shown = run.length > 24 ? `${run.slice(0, 24)}...` : run;
      throw new BadRequest(`request body is not valid UTF-8: the percent-encoded bytes ${shown} of ${what} are not UTF-8`);
    }
  });
}

/** The name and value pairs of an application/x-www-form-urlencoded body, in order; bytes that are not UTF-8 are refused. */
function formPairs(body: Buffer): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const pair of bodyText(body).split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = formComponent(equals < 0 ? pair : pair.slice(0, equals), 'a form field name');
    pairs.push([name, equals < 0 ? '' : formComponent(pair.slice(equals + 1), `form field "${name}"`)]);
  }
  return pairs;
}

/** A field set as data (defineProperty: a field named __proto__ is a field, not the object's prototype). */
function setField<T>(fields: Record<string, T>, name: string, value: T): void {
  Object.defineProperty(fields, name, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * An application/x-www-form-urlencoded body, as URLSearchParams reads it (the last of repeated names wins), but
 * bytes that are not UTF-8, raw or percent-encoded, are refused.
 */
export function parseFormBody(body: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of formPairs(body)) setField(fields, name, value);
  return fields;
}

/**
 * A form body as the console reads it: a name given more than once (a multiple choice's checkboxes) holds the list
 * of its values, in order; the console's form check (console/formFields.ts) says which names may repeat.
 */
export function parseFormLists(body: Buffer): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = {};
  for (const [name, value] of formPairs(body)) {
    const before = Object.hasOwn(fields, name) ? fields[name] : undefined;
    setField(fields, name, before === undefined ? value : [before, value].flat());
  }
  return fields;
}

/** "GET", "GET or HEAD", "DELETE, GET or HEAD". */
export function methodList(methods: string[]): string {
  return methods.length < 2 ? (methods[0] ?? '') : `${methods.slice(0, -1).join(', ')} or ${methods.at(-1)}`;
}
