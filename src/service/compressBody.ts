import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createBrotliCompress, createGzip } from 'node:zlib';
import type { Coding } from './acceptEncoding.js';
import type { GrowingBody } from './growingBody.js';

/**
 * Brotli quality 4: at 250,000 users (141 MB of JSON) about 1.3 s of one zlib thread for 8.5 MB, where the default
 * (11) takes minutes; gzip level 6 (zlib's default) about 1.1 s for 12.5 MB. Each body is compressed once per
 * revision, so the time matters less than the bytes, but it must stay in seconds.
 */
const BROTLI_QUALITY = 4;
const GZIP_LEVEL = 6;
/** The compressed bytes come in chunks of this size (zlib's default, 16 KiB, makes 800 of them for 12 MB). */
const CHUNK_SIZE = 256 * 1024;

/**
 * `source` compressed with `coding` into `sink`, as the source grows, through a zlib stream: the work runs on
 * libuv's thread pool, a chunk at a time, so the event loop keeps answering while 100 MB are compressed. The sink
 * is ended here; a failure (the source's too) is thrown to the caller.
 */
export async function compressBody(source: GrowingBody, coding: Coding, sink: GrowingBody): Promise<void> {
  const compressor =
    coding === 'gzip'
      ? createGzip({ level: GZIP_LEVEL, chunkSize: CHUNK_SIZE })
      : createBrotliCompress({
          chunkSize: CHUNK_SIZE,
          params: {
            [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            ...(source.complete ? { [constants.BROTLI_PARAM_SIZE_HINT]: source.length } : {}),
          },
        });
  await pipeline(Readable.from(source.read(), { objectMode: false }), compressor, async (compressed: AsyncIterable<Buffer>) => {
    for await (const chunk of compressed) sink.push(chunk);
  });
  sink.end();
}
