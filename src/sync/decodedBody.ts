import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip } from 'node:zlib';

/** The content codings the agent asks for (Accept-Encoding), and identity (none). */
export type ContentCoding = 'identity' | 'gzip' | 'br';

/** What the agent sends as Accept-Encoding. */
export const ACCEPTED_CODINGS = 'gzip, br';

/** An answer in a Content-Encoding the agent did not ask for (deflate, zstd, several at once). */
export class UnknownCodingError extends Error {
  constructor(readonly coding: string) {
    super(`its Content-Encoding is "${coding}", which the agent did not ask for (Accept-Encoding: ${ACCEPTED_CODINGS})`);
    this.name = 'UnknownCodingError';
  }
}

/** A compressed body that does not decompress: not gzip or brotli at all, corrupt, or cut short. */
export class BodyDecodeError extends Error {
  constructor(
    readonly coding: ContentCoding,
    reason: string,
  ) {
    super(`it does not decompress as ${coding === 'br' ? 'brotli' : coding} (Content-Encoding: ${coding}): ${reason}`);
    this.name = 'BodyDecodeError';
  }
}

/** The coding of a Content-Encoding header; an absent or empty one is identity. */
export function contentCoding(header: string | undefined): ContentCoding {
  const value = (header ?? '').trim().toLowerCase();
  if (value === '' || value === 'identity') return 'identity';
  if (value === 'gzip' || value === 'x-gzip') return 'gzip';
  if (value === 'br') return 'br';
  throw new UnknownCodingError(value);
}

/** zlib's own errors (Z_DATA_ERROR, Z_BUF_ERROR, brotli's ERR__ERROR_...), as opposed to the transport's. */
function isDecoderError(err: unknown): err is Error {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === 'string' && /^(Z_|ERR__ERROR|ERR_BROTLI)/.test(code);
}

/**
 * The body's bytes with its Content-Encoding undone, as a stream: each decompressed chunk (zlib's, 16 KiB) is
 * yielded as it comes, pulled by the reader, so a body that expands a thousandfold (a zip bomb) never sits in
 * memory: the reader counts what it takes and stops at its limit, which ends the decompression there.
 * A body that does not decompress (corrupt, not in that coding, truncated) throws BodyDecodeError; an error of
 * the transport (`raw`) is thrown as it is. `signal` ends a decompression that waits (its thread pool busy or
 * stuck): the reader gets the abort's error at once instead of waiting for zlib.
 */
export async function* decodedBody(coding: ContentCoding, raw: AsyncIterable<Buffer>, signal?: AbortSignal): AsyncGenerator<Buffer> {
  if (coding === 'identity') {
    yield* raw;
    return;
  }
  const decoder = coding === 'gzip' ? createGunzip() : createBrotliDecompress();
  const abort = () => decoder.destroy(new Error('the decompression was aborted'));
  signal?.addEventListener('abort', abort, { once: true });
  if (signal?.aborted) abort();
  const feeding = pipeline(raw, decoder);
  feeding.catch(() => {}); // its error reaches the reader through the decoder; awaited below for the rest
  try {
    for await (const chunk of decoder) yield chunk as Buffer;
    await feeding;
  } catch (err) {
    if (isDecoderError(err)) throw new BodyDecodeError(coding, err.message);
    throw err;
  } finally {
    signal?.removeEventListener('abort', abort);
    decoder.destroy();
  }
}
