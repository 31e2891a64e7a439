import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { describeFsError, errorCode } from '../../util/errors.js';
import { TarError, TarParser, type TarHandler } from './tarReader.js';

/**
 * A release bundle (`.tar.gz`) read entry by entry into `handler`, from disk as it decompresses (a bundle is tens
 * of megabytes; it is never held whole). `stop` is asked after each piece: true ends the reading there (the first
 * entry is all `RELEASE.json` needs). A damaged gzip stream or tar archive is a TarError.
 */
export async function readBundle(path: string, handler: TarHandler, stop: () => boolean = () => false): Promise<void> {
  const parser = new TarParser(handler);
  const file = createReadStream(path);
  const gunzip = createGunzip();
  let fileError: Error | null = null;
  file.on('error', (err) => {
    fileError = err;
    gunzip.destroy(err);
  });
  file.pipe(gunzip);
  try {
    for await (const chunk of gunzip) {
      parser.write(chunk as Buffer);
      if (stop()) return;
    }
    parser.end();
  } catch (err) {
    if (err instanceof TarError) throw err;
    if (fileError) throw new TarError(`cannot read ${path}: ${describeFsError(fileError)}`);
    if (errorCode(err)?.startsWith('Z_')) {
      throw new TarError(`${path} is not a whole gzip file (${(err as Error).message}): truncated or not a bundle`);
    }
    throw err;
  } finally {
    file.destroy();
    gunzip.destroy();
  }
}
