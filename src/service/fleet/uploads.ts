import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BadRequest } from '../badRequest.js';

/*
 * The fleet's uploads (a release bundle, a reader's firmware file): an application/octet-stream body read as it
 * arrives, its size and SHA-256 computed on the way, refused when over its bound or cut short. Nothing of a refused
 * upload is kept.
 */

/** What a body held: its size and SHA-256 (lower-case hex). */
export interface Received {
  size: number;
  sha256: string;
}

/** The content type of an upload: the body is the file's bytes. */
export const UPLOAD_TYPE = 'application/octet-stream';

/**
 * Routes that take an upload: registered in `register` inside a scope of their own, where an application/octet-stream
 * body reaches the handler unread (a stream in request.body); the service's other routes still refuse it (415).
 */
export function uploadScope(app: FastifyInstance, register: (scope: FastifyInstance) => void): void {
  void app.register(async (scope) => {
    scope.addContentTypeParser(UPLOAD_TYPE, (_request, payload, done) => done(null, payload));
    register(scope);
  });
}

/** Whether a body is there at all: a request without one (or of another type) is refused naming what to send. */
function bodyStream(request: FastifyRequest, what: string): Readable {
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  const body = request.body as Readable | undefined;
  if (type !== UPLOAD_TYPE || body === undefined || typeof (body as Partial<Readable>).pipe !== 'function') {
    throw new BadRequest(`send ${what} as the request body, Content-Type: ${UPLOAD_TYPE}`);
  }
  return body;
}

/**
 * Reads an upload's body into `sink` (each chunk as it arrives), at most `max` bytes (`limitWords` says which bound
 * for the 413). A declared Content-Length over the bound is refused before a byte is read; a body that ends before
 * its Content-Length, or whose connection breaks, is a 400 saying so.
 */
async function receive(
  request: FastifyRequest,
  what: string,
  max: number,
  limitWords: string,
  sink: (source: AsyncIterable<Buffer>) => Promise<void>,
): Promise<Received> {
  const body = bodyStream(request, what);
  const declaredHeader = request.headers['content-length'];
  const declared = declaredHeader === undefined ? undefined : Number(declaredHeader);
  const tooLarge = (size: string) => new BadRequest(`${what} is ${size}, over ${limitWords}: nothing was stored`, 413);
  if (declared !== undefined && declared > max) throw tooLarge(`${declared} bytes`);
  const hash = createHash('sha256');
  let size = 0;
  async function* counted(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      size += chunk.length;
      if (size > max) throw tooLarge(`over ${max} bytes`);
      hash.update(chunk);
      yield chunk;
    }
  }
  try {
    // A body refused part way is left unread, not destroyed (that would reset the connection before the answer):
    // keyCheck.ts closes the connection once the answer is sent.
    await sink(counted(body.iterator({ destroyOnReturn: false })));
  } catch (err) {
    if (err instanceof BadRequest) throw err;
    throw new BadRequest(`${what} was cut short: the connection broke after ${size} of ${declared ?? 'its'} bytes; nothing was stored`);
  }
  if (declared !== undefined && size !== declared) {
    throw new BadRequest(`${what} was cut short: ${size} of the ${declared} bytes its Content-Length announced arrived; nothing was stored`);
  }
  if (size === 0) throw new BadRequest(`${what} is empty: nothing was stored`);
  return { size, sha256: hash.digest('hex') };
}

/** An upload written to `file` (created 0600, never an existing one), with its size and SHA-256. */
export function receiveToFile(request: FastifyRequest, what: string, max: number, limitWords: string, file: string): Promise<Received> {
  return receive(request, what, max, limitWords, (source) => pipeline(source, createWriteStream(file, { flags: 'wx', mode: 0o600 })));
}

/** An upload held in memory (a small one: a reader's firmware file), with its size and SHA-256. */
export async function receiveToBuffer(request: FastifyRequest, what: string, max: number, limitWords: string): Promise<Received & { bytes: Buffer }> {
  const chunks: Buffer[] = [];
  const received = await receive(request, what, max, limitWords, async (source) => {
    for await (const chunk of source) chunks.push(chunk);
  });
  return Object.assign(received, { bytes: Buffer.concat(chunks) });
}
