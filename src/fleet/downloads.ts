import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { DoorAgentError } from '../util/errors.js';

/** What a download must be: its size and SHA-256 as the service (and for a bundle, the release key) said. */
export interface ExpectedFile {
  /** For the messages: "the bundle of 0.2.0", "firmware file reader.fw". */
  what: string;
  size: number;
  sha256: string;
}

/** A download that is not the file it must be (over its size, cut short, another SHA-256): not taken. */
export class DownloadRefused extends DoorAgentError {
  constructor(message: string) {
    super(message);
    this.name = 'DownloadRefused';
  }
}

/**
 * The fleet's downloads (an update's bundle, a reader's firmware file; docs/fleet.md): the body read as it comes,
 * never past the size expected, its SHA-256 computed on the way, and checked at the end. `sink` takes each piece.
 */
async function checkedChunks(body: AsyncIterable<Buffer>, expected: ExpectedFile, sink: (chunk: Buffer) => void, stop: () => void): Promise<void> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > expected.size) {
      stop();
      throw new DownloadRefused(`${expected.what}: the service sent more than the ${expected.size} bytes expected: not the file named`);
    }
    hash.update(chunk);
    sink(chunk);
  }
  if (size < expected.size) throw new DownloadRefused(`${expected.what}: ${size} bytes received of ${expected.size}: cut short`);
  const sha256 = hash.digest('hex');
  if (sha256 !== expected.sha256)
    throw new DownloadRefused(`${expected.what}: its SHA-256 is ${sha256}, not the ${expected.sha256} expected: altered or damaged on the way`);
}

type Body = AsyncIterable<Buffer> & { destroy(): void };

/** The whole file in memory (a firmware file: at most 16 MiB), checked. */
export async function downloadBytes(body: Body, expected: ExpectedFile): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await checkedChunks(
    body,
    expected,
    (chunk) => chunks.push(chunk),
    () => body.destroy(),
  );
  return Buffer.concat(chunks);
}

/**
 * The file written to `path` (0600), checked: it is written as `<path>.part`, synced, and renamed to `path` only
 * once whole and checked. A download that fails leaves nothing under either name.
 */
export async function downloadFile(body: Body, expected: ExpectedFile, path: string): Promise<void> {
  const partial = `${path}.part`;
  rmSync(path, { force: true });
  const fd = openSync(partial, 'w', 0o600);
  let closed = false;
  try {
    await checkedChunks(
      body,
      expected,
      (chunk) => {
        for (let written = 0; written < chunk.length; ) written += writeSync(fd, chunk, written);
      },
      () => body.destroy(),
    );
    fsyncSync(fd);
    closeSync(fd);
    closed = true;
    renameSync(partial, path);
  } catch (err) {
    if (!closed) closeSync(fd);
    rmSync(partial, { force: true });
    body.destroy();
    throw err;
  }
}
