import type { KeyObject } from 'node:crypto';
import { open } from 'node:fs/promises';
import { releaseManifestSchema, type ReleaseManifest } from '../../api/fleet.js';
import { fleetSignatureMatches } from '../../protocol/fleetSigning.js';
import { problemsInOneLine } from '../../util/issues.js';
import { BadRequest } from '../badRequest.js';
import type { SqlDb } from '../sql/sqlDb.js';
import type { Received } from './uploads.js';

/*
 * The release bundles the service holds (docs/fleet.md, "Signed updates"): a release is a (version, arch), its
 * manifest signed by the release key (fleet_releases), its bytes in 1 MiB chunks (fleet_release_chunks) so that any
 * service process serves it. A bundle is stored only when the release key signed its manifest, in one transaction:
 * a refusal leaves nothing of it.
 */

/** The size of a stored chunk. */
const CHUNK_BYTES = 1 << 20;
/** The largest bundle taken without server.fleet.maxBundleMegabytes: 200 MiB. */
export const DEFAULT_MAX_BUNDLE_BYTES = 200 << 20;

/** One stored release. */
export interface StoredRelease {
  manifest: ReleaseManifest;
  signature: string;
  /** ms */
  uploadedAt: number;
  uploadedBy: string;
}

interface Row {
  version: string;
  arch: string;
  sha256: string;
  size: number | string;
  signature: string;
  uploaded_at: number | string;
  uploaded_by: string;
}

const COLUMNS = 'version, arch, sha256, size, signature, uploaded_at, uploaded_by';

const fromRow = (row: Row): StoredRelease => ({
  manifest: { version: row.version, arch: row.arch, sha256: row.sha256, size: Number(row.size) },
  signature: row.signature,
  uploadedAt: Number(row.uploaded_at),
  uploadedBy: row.uploaded_by,
});

/** A release's id in the service's paths: `<version>_<arch>` (a version holds no "_"). */
const releaseId = (manifest: Pick<ReleaseManifest, 'version' | 'arch'>) => `${manifest.version}_${manifest.arch}`;
/** Where an agent (or an operator) fetches a release's bundle. */
export const bundlePath = (manifest: Pick<ReleaseManifest, 'version' | 'arch'>) => `/fleet/releases/${releaseId(manifest)}/bundle`;

/** The refusal of a release key that is not configured: nothing can be checked, so nothing is stored. */
export const NO_RELEASE_KEY = 'this service has no server.fleet.releasePublicKeyFile: it cannot check a bundle';

export class Releases {
  constructor(private readonly db: SqlDb) {}

  /** Every release, the newest upload first. */
  async list(): Promise<StoredRelease[]> {
    return (await this.db.all<Row>(`SELECT ${COLUMNS} FROM fleet_releases ORDER BY uploaded_at DESC, version, arch`)).map(fromRow);
  }

  async get(version: string, arch: string): Promise<StoredRelease | undefined> {
    const row = await this.db.get<Row>(`SELECT ${COLUMNS} FROM fleet_releases WHERE version = ? AND arch = ?`, [version, arch]);
    return row ? fromRow(row) : undefined;
  }

  /** The refusal of a second upload of a release (409), naming it. */
  static exists(version: string, arch: string): BadRequest {
    return new BadRequest(`release ${version} for ${arch} is stored already: a release is never replaced (upload a new version)`, 409);
  }

  /**
   * Stores the bundle in `file` (its size and SHA-256 as read) as release `version` for `arch`, when `signature` is
   * the release key's over its manifest; the manifest stored. Refused, with nothing stored: 400 when the manifest is
   * not valid or the signature is not the release key's, 409 when that release exists. The signature is checked
   * before the transaction begins; the chunks are read from the file inside it (on PostgreSQL it may run again).
   */
  async store(input: {
    releaseKey: KeyObject;
    version: string;
    arch: string;
    file: string;
    received: Received;
    signature: string;
    by: string;
    now: number;
  }): Promise<StoredRelease> {
    const parsed = releaseManifestSchema.safeParse({ version: input.version, arch: input.arch, sha256: input.received.sha256, size: input.received.size });
    if (!parsed.success) throw new BadRequest(`the bundle's manifest is not valid: ${problemsInOneLine(parsed.error.issues)}; nothing was stored`);
    const manifest = parsed.data;
    if (!fleetSignatureMatches(input.releaseKey, 'release', manifest, input.signature)) {
      throw new BadRequest(
        `signature: not the release key's signature of this bundle (version ${manifest.version}, ${manifest.arch}, ${manifest.size} bytes, ` +
          `SHA-256 ${manifest.sha256}): signed by another key, for another version or architecture, or the bytes changed; nothing was stored`,
      );
    }
    return this.db.transaction(async () => {
      const inserted = await this.db.value<string>(
        `INSERT INTO fleet_releases (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (version, arch) DO NOTHING RETURNING version`,
        [manifest.version, manifest.arch, manifest.sha256, manifest.size, input.signature, input.now, input.by],
      );
      if (inserted === undefined) throw Releases.exists(manifest.version, manifest.arch);
      await this.writeChunks(manifest, input.file);
      return { manifest, signature: input.signature, uploadedAt: input.now, uploadedBy: input.by };
    });
  }

  /** The file's bytes as chunks of the release; a file that is not as long as the manifest says fails the transaction. */
  private async writeChunks(manifest: ReleaseManifest, file: string): Promise<void> {
    const handle = await open(file, 'r');
    try {
      let position = 0;
      for (let seq = 0; position < manifest.size; seq++) {
        const buffer = Buffer.alloc(Math.min(CHUNK_BYTES, manifest.size - position));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
        if (bytesRead !== buffer.length) throw new Error(`${file} ended at byte ${position + bytesRead}, before the ${manifest.size} bytes of its manifest`);
        await this.db.run('INSERT INTO fleet_release_chunks (version, arch, seq, bytes) VALUES (?, ?, ?, ?)', [manifest.version, manifest.arch, seq, buffer]);
        position += bytesRead;
      }
    } finally {
      await handle.close();
    }
  }

  /** The bundle's bytes, chunk by chunk as stored (one query each: a bundle is never held whole in memory). */
  async *bundle(manifest: Pick<ReleaseManifest, 'version' | 'arch' | 'size'>): AsyncGenerator<Buffer> {
    let sent = 0;
    for (let seq = 0; sent < manifest.size; seq++) {
      const bytes = await this.db.value<Buffer | Uint8Array>('SELECT bytes FROM fleet_release_chunks WHERE version = ? AND arch = ? AND seq = ?', [
        manifest.version,
        manifest.arch,
        seq,
      ]);
      if (bytes === undefined) throw new Error(`release ${releaseId(manifest)} lacks its chunk ${seq} (${sent} of ${manifest.size} bytes sent)`);
      const chunk = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
      sent += chunk.length;
      yield chunk;
    }
  }
}
