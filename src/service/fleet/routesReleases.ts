import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { releaseManifestSchema, signatureSchema } from '../../api/fleet.js';
import { releaseStoredSchema, releasesAnswerSchema } from '../../api/fleetUpdates.js';
import { publicKeyFromRaw } from '../../protocol/fleetSigning.js';
import { documented } from '../openapi/routeDoc.js';
import { callerOf } from '../keyCheck.js';
import { BadRequest, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { operatorOrAgent } from './agentKey.js';
import { fleetOf } from './fleetDeps.js';
import { FleetAgents } from './fleetAgents.js';
import { DEFAULT_MAX_BUNDLE_BYTES, NO_RELEASE_KEY, Releases, bundlePath, type StoredRelease } from './releases.js';
import { Rollouts } from './rollouts.js';
import { UPLOAD_TYPE, receiveToFile, uploadScope } from './uploads.js';

const releasePath = z.object({
  version: releaseManifestSchema.shape.version.describe('the release version, as its RELEASE.json says'),
  arch: releaseManifestSchema.shape.arch.describe('its Debian architecture (arm64, armhf, amd64)'),
});
const uploadParams = z.object({
  signature: z
    .string({
      error: "a bundle needs the release key's signature (the `signature` of BUNDLE.sig.json, door-agent release sign): an unsigned bundle is refused",
    })
    // A "+" sent unescaped in a query string reads as a space.
    .transform((s) => s.replaceAll(' ', '+'))
    .pipe(signatureSchema)
    .describe("the release key's signature of the bundle's manifest, base64 (BUNDLE.sig.json's `signature`)"),
});
const bundleParams = z.object({
  version_arch: z
    .string()
    .regex(/^[^_]+_.+$/, "must be <version>_<arch>, as an offer's bundle_path names it")
    .transform((id, ctx) => {
      const at = id.indexOf('_');
      const parsed = releasePath.safeParse({ version: id.slice(0, at), arch: id.slice(at + 1) });
      if (!parsed.success) {
        for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: `${issue.path.join('.')} ${issue.message}` });
        return z.NEVER;
      }
      return parsed.data;
    })
    .describe('the release: <version>_<arch>'),
});

const iso = (ms: number) => new Date(ms).toISOString();
const shown = (r: StoredRelease) =>
  Object.assign({}, r.manifest, { signature: r.signature, bundle_path: bundlePath(r.manifest), uploaded_at: iso(r.uploadedAt), uploaded_by: r.uploadedBy });
const by = (request: FastifyRequest) => callerOf(request);

/**
 * The release bundles (docs/fleet.md, "Signed updates"): an operator uploads one with the release key's signature
 * (stored only when it verifies), lists them, fetches one; an agent offered a release fetches its bundle with its
 * own DOOR key.
 */
export function registerReleaseRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const releases = new Releases(ctx.db);
  const rollouts = new Rollouts(ctx.db);
  const agents = new FleetAgents(ctx.db);
  const notFleet = 'This service has no server.fleet section.';

  uploadScope(app, (scope) => {
    scope.put(
      '/fleet/releases/:version/:arch',
      documented({
        summary: 'Stores a release bundle, when the release key signed it.',
        description:
          'The body is the bundle (`door-agent-<version>-<arch>.tar.gz`), streamed; its SHA-256 and size are computed as it arrives and ' +
          "the manifest {version, arch, sha256, size} is checked against `signature` with the release key's public half " +
          '(server.fleet.releasePublicKeyFile) before anything is stored. `door-agent service release add BUNDLE` does the same on ' +
          "the service's machine. A refusal stores nothing.",
        tag: 'Fleet',
        key: 'ADMIN',
        pathParams: releasePath,
        params: uploadParams,
        rawBody: { type: UPLOAD_TYPE, description: 'the bundle, at most server.fleet.maxBundleMegabytes (200 MiB by default)' },
        answer: releaseStoredSchema,
        statuses: {
          404: notFleet,
          409: `That version and architecture are stored already, or: ${NO_RELEASE_KEY}.`,
          413: 'The bundle is over server.fleet.maxBundleMegabytes.',
        },
      }),
      async (request) => {
        ctx.requireRank(request, 'ADMIN');
        const fleet = fleetOf(ctx);
        const { version, arch } = parseParams(releasePath, request.params, undefined);
        const { signature } = parseParams(uploadParams, request.query, undefined);
        if (fleet.keys.releaseRaw === null) throw new BadRequest(NO_RELEASE_KEY, 409);
        const releaseKey = publicKeyFromRaw(fleet.keys.releaseRaw)!;
        if (await releases.get(version, arch)) throw Releases.exists(version, arch);
        const max = fleet.maxBundleBytes ?? DEFAULT_MAX_BUNDLE_BYTES;
        const dir = await mkdtemp(join(tmpdir(), 'door-agent-bundle-'));
        try {
          const file = join(dir, 'bundle');
          const limit = `server.fleet.maxBundleMegabytes (${Math.round(max / 1048576)} MiB)`;
          const received = await receiveToFile(request, 'the bundle', max, limit, file);
          const stored = await releases.store({ releaseKey, version, arch, file, received, signature, by: by(request), now: ctx.clock.wallNow() });
          ctx.logger.info({ version, arch, size: received.size, sha256: received.sha256 }, 'release bundle stored');
          return { success: `release ${version} for ${arch} stored (${received.size} bytes)`, release: shown(stored) };
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
    );
  });

  app.get(
    '/fleet/releases',
    documented({
      summary: 'Every release bundle stored: its signed manifest and where it is fetched.',
      tag: 'Fleet',
      key: 'ADMIN',
      answer: releasesAnswerSchema,
      statuses: { 404: notFleet },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      return { releases: (await releases.list()).map(shown) };
    },
  );

  app.get(
    '/fleet/releases/:version_arch/bundle',
    documented({
      summary: "A release's bundle, as uploaded (Content-Length: its size).",
      description: 'An ADMIN key, or the DOOR key of an agent a rollout offers this release now (the path of its offer).',
      tag: 'Fleet',
      key: 'any',
      pathParams: bundleParams,
      answer: z.string(),
      rawAnswer: { type: UPLOAD_TYPE, description: 'the bundle' },
      statuses: { 404: `No such release. ${notFleet}` },
    }),
    async (request, reply) => {
      fleetOf(ctx);
      const { version_arch: id } = parseParams(bundleParams, request.params, undefined);
      const release = await releases.get(id.version, id.arch);
      await operatorOrAgent(request, agents, `release ${id.version} for ${id.arch}`, (agentId) => rollouts.isOffered(agentId, id.version, id.arch));
      if (!release) throw new BadRequest(`no release ${id.version} for ${id.arch}`, 404);
      const { manifest } = release;
      return reply
        .type(UPLOAD_TYPE)
        .header('content-length', String(manifest.size))
        .header('content-disposition', `attachment; filename="door-agent-${manifest.version}-${manifest.arch}.tar.gz"`)
        .send(Readable.from(releases.bundle(manifest)));
    },
  );
}
