import * as z from 'zod';
import { releaseManifestSchema } from '../../api/fleet.js';
import { problemsInOneLine } from '../../util/issues.js';
import { readBundle } from './bundleStream.js';
import { TarError } from './tarReader.js';

/**
 * `RELEASE.json`, the first entry of a release bundle (scripts/release-bundle.sh): the version and the Debian
 * architecture of the program inside, and the ABI of the Node.js its native addons were built for.
 */
export const releaseInfoSchema = z.strictObject({
  version: releaseManifestSchema.shape.version,
  arch: releaseManifestSchema.shape.arch,
  node_abi: z.string().regex(/^\d{1,4}$/, "must be Node.js's ABI number (process.versions.modules)"),
});
export type ReleaseInfo = z.infer<typeof releaseInfoSchema>;

const RELEASE_FILE = 'RELEASE.json';
const MAX_RELEASE_BYTES = 4096;

/** An archive path without its leading `./` (GNU tar writes `./dist/...` for `tar -C DIR .`). */
export function withoutDotSlash(path: string): string {
  let p = path;
  while (p.startsWith('./')) p = p.slice(2);
  return p;
}

/** The bundle's RELEASE.json, read from its first entry; a TarError naming what is wrong when it is not there or not one. */
export async function readReleaseInfo(bundle: string): Promise<ReleaseInfo> {
  let first: { path: string; type: string; size: number } | null = null;
  const chunks: Buffer[] = [];
  let done = false;
  await readBundle(
    bundle,
    {
      // The pieces of one chunk go on past the first entry: only its own are kept.
      entry: (entry) => {
        if (first !== null) return;
        first = entry;
        if (entry.type === 'file' && entry.size > MAX_RELEASE_BYTES)
          throw new TarError(`${bundle}: its first entry is ${entry.size} bytes, not a RELEASE.json`);
      },
      data: (chunk) => {
        if (!done) chunks.push(chunk);
      },
      entryEnd: () => {
        done = true;
      },
    },
    () => done,
  );
  const entry = first as { path: string; type: string } | null;
  if (entry === null || !done) throw new TarError(`${bundle} holds no entry`);
  if (withoutDotSlash(entry.path) !== RELEASE_FILE || entry.type !== 'file') {
    throw new TarError(`${bundle}: its first entry is ${entry.path}, not ${RELEASE_FILE}: not a bundle made by scripts/release-bundle.sh`);
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new TarError(`${bundle}: ${RELEASE_FILE} is not JSON (${(err as Error).message})`);
  }
  const parsed = releaseInfoSchema.safeParse(json);
  if (!parsed.success) throw new TarError(`${bundle}: ${RELEASE_FILE} ${problemsInOneLine(parsed.error.issues)}`);
  return parsed.data;
}
