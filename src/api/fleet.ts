import * as z from 'zod';

/**
 * The fleet's messages between an agent and the service (docs/fleet.md): enrolment, the agent's exchange with the
 * service (its configuration, an update offered, reader firmware tasks) and its report. Both sides validate every
 * message with these schemas before anything of it is used.
 */

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const base64 = (bytes: number, what: string) =>
  z
    .string()
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, `${what} must be base64`)
    .refine((s) => Buffer.from(s, 'base64').length === bytes, `${what} must be ${bytes} bytes`);
const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256, 64 lower-case hex digits');
const version = z.string().regex(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/, 'must be a version such as 1.4.2');
const arch = z.string().regex(/^[a-z0-9_-]{1,32}$/, 'must be a Debian architecture such as arm64');
const text = (max: number) => z.string().max(max);

/** An Ed25519 public key's raw 32 bytes, base64. */
export const publicKeyRawSchema = base64(32, 'the key');
/** An Ed25519 signature, base64 (64 bytes). */
export const signatureSchema = base64(64, 'the signature');

/**
 * An enrolment code: `da1.<secret>.<fingerprint>`, the secret 20 random bytes and the fingerprint of the service's
 * identity key (16 bytes), both lower-case base32. Single use, it expires (server.fleet.enrolCodeHours).
 */
const ENROL_CODE = /^da1\.([a-z2-7]{32})\.([a-z2-7]{26})$/;
export function parseEnrolCode(code: string): { secret: string; fingerprint: string } | null {
  const m = ENROL_CODE.exec(code.trim());
  return m ? { secret: m[1]!, fingerprint: m[2]! } : null;
}

/** What an agent reports of its board when it enrols (shown to the operator who adopts it). */
export const boardFactsSchema = z.object({
  hostname: text(253).min(1),
  version,
  arch,
  node: text(32),
  gpio_chips: z.array(text(64)).max(64),
  serial_devices: z.array(text(256)).max(256),
});
export type BoardFacts = z.infer<typeof boardFactsSchema>;

/** POST /fleet/enrol: no key, the code's secret is the credential. */
export const enrolRequestSchema = z.object({ secret: z.string().regex(/^[a-z2-7]{32}$/, 'must be the secret of an enrolment code'), facts: boardFactsSchema });

/** A nonce of the enrolment's challenge: 32 random bytes, base64url without padding (43 characters). */
const nonceSchema = z.string().regex(/^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/, 'must be 32 random bytes, base64url (43 characters)');
/** The origin of a service's server.publicUrl: scheme, host and port, nothing after. */
const originSchema = z.string().regex(/^https?:\/\/[^/?#\s]{1,255}$/, 'must be an origin such as https://access.example.org');

/** POST /fleet/enrol/challenge: no key; the board's nonce, before it sends any code's secret. */
export const enrolChallengeRequestSchema = z.object({ nonce: nonceSchema });
/**
 * POST /fleet/enrol/challenge's answer: the identity key (raw) and its signature (purpose 'enrol-challenge') of
 * `{nonce, origin}`, the origin being server.publicUrl's, given beside so that a board told another address can say which.
 */
export const enrolChallengeAnswerSchema = z.object({ origin: originSchema, service_key: publicKeyRawSchema, signature: signatureSchema });

/** What the service signs (purpose 'enrol') when it accepts a code: bound to that code's secret by its hash. */
const enrolAcceptedSchema = z.object({
  enrolment_id: z.uuid(),
  secret_sha256: sha256Hex,
  poll_secret: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be 32 bytes, base64url'),
});
/** POST /fleet/enrol's answer. */
export const enrolAnswerSchema = z.object({ accepted: enrolAcceptedSchema, service_key: publicKeyRawSchema, signature: signatureSchema });

/** What an adopted agent is given (signed, purpose 'grant'): its name, its DOOR key, its broker login, the release key. */
export const grantSchema = z.object({
  enrolment_id: z.uuid(),
  agent_id: z.string().regex(AGENT_ID, 'must be 1-64 letters, digits, "-" or "_"'),
  service_url: z.url({ protocol: /^https?$/ }),
  api_key: z.string().min(16).max(200),
  mqtt: z.object({ url: z.url({ protocol: /^(mqtts?|wss?)$/ }), username: text(128).min(1), password: text(200).min(16) }).nullable(),
  release_key: publicKeyRawSchema.nullable(),
});
export type Grant = z.infer<typeof grantSchema>;

/** GET /fleet/enrolments/{enrolment_id} (Bearer: the poll secret): pending, refused, or adopted with the grant. */
export const enrolmentStateSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('pending') }),
  z.object({ state: z.literal('refused'), reason: text(500) }),
  z.object({ state: z.literal('adopted'), grant: grantSchema, signature: signatureSchema }),
]);

/** One configuration version as delivered (the document signed, purpose 'config', over this object less `signature`). */
const configVersionSchema = z.object({
  agent_id: z.string().regex(AGENT_ID),
  version: z.number().int().positive(),
  document: text(1_000_000),
  sha256: sha256Hex,
});
export const signedConfigSchema = configVersionSchema.extend({ signature: signatureSchema });

/** A release bundle as the release key signs it (purpose 'release'). */
export const releaseManifestSchema = z.object({
  version,
  arch,
  sha256: sha256Hex,
  size: z
    .number()
    .int()
    .positive()
    .max(1 << 30),
});
export type ReleaseManifest = z.infer<typeof releaseManifestSchema>;
/** A bundle's signature file (`<bundle>.sig.json`, written by `door-agent release sign`): the manifest and its signature. */
export const signedReleaseSchema = z.strictObject({ manifest: releaseManifestSchema, signature: signatureSchema });
export type SignedRelease = z.infer<typeof signedReleaseSchema>;

/** An update offered to an agent by a rollout. */
export const updateOfferSchema = z.object({
  rollout_id: z.number().int().positive(),
  manifest: releaseManifestSchema,
  signature: signatureSchema,
  /** Where the bundle is (a path on the service, GET with the agent's key). */
  bundle_path: z.string().regex(/^\/fleet\/releases\/[0-9A-Za-z.+_-]+\/bundle$/),
  allow_downgrade: z.boolean(),
  health_bound_seconds: z.number().int().min(10).max(3600),
});
export type UpdateOffer = z.infer<typeof updateOfferSchema>;

/** A reader firmware transfer asked of an agent (issue 54 item 4). */
export const firmwareTaskSchema = z.object({
  task_id: z.number().int().positive(),
  kind: z.literal('reader_firmware'),
  readers: z.array(text(128).min(1)).min(1).max(64),
  file: z.object({
    name: text(128).min(1),
    sha256: sha256Hex,
    size: z
      .number()
      .int()
      .positive()
      .max(16 << 20),
    path: z.string().regex(/^\/fleet\/files\/\d+$/),
  }),
});

/** GET /fleet/self?config=<version held> (the agent's DOOR key): what the service has for it. */
export const fleetExchangeSchema = z.object({
  agent_id: z.string().regex(AGENT_ID),
  /** A newer configuration than the one held; null when the one held is current (or none is kept for it). */
  config: signedConfigSchema.nullable(),
  update: updateOfferSchema.nullable(),
  tasks: z.array(firmwareTaskSchema).max(16),
});

const problems = z.array(text(2000)).max(200);

/** POST /fleet/self/report: where the agent stands (each part optional: what changed is sent). */
export const fleetReportSchema = z.object({
  version,
  config: z
    .object({
      applied: z.number().int().positive().nullable(),
      refused: z.object({ version: z.number().int().positive(), problems }).nullable(),
      /** How the last version was applied: live, or by a restart under the fail-secure start. */
      how: z.enum(['live', 'restart']).nullable(),
    })
    .optional(),
  update: z
    .object({
      rollout_id: z.number().int().positive(),
      state: z.enum(['downloading', 'installing', 'healthy', 'rolled_back', 'refused', 'failed']),
      detail: text(2000),
    })
    .optional(),
  tasks: z
    .array(z.object({ task_id: z.number().int().positive(), state: z.enum(['running', 'done', 'failed']), detail: text(2000) }))
    .max(16)
    .optional(),
});
export type FleetReport = z.infer<typeof fleetReportSchema>;

/** POST /fleet/enrol-codes (ADMIN): a new code, the line the installer types on the board, and when it expires. */
export const enrolCodeAnswerSchema = z.object({
  code: z.string().regex(ENROL_CODE, 'must be an enrolment code da1.<secret>.<fingerprint>'),
  command: z.string().describe('door-agent enrol <server.publicUrl> <code>: what the installer types on the board'),
  expires_at: z.iso.datetime().describe('when the code stops being good (UTC, ISO 8601)'),
});

/** One enrolment as GET /fleet/agents lists it: its state, what the agent reported of its board, its times. */
const fleetAgentSchema = z.object({
  enrolment_id: z.uuid(),
  state: z.enum(['pending', 'adopted', 'refused']),
  /** Given at adoption. */
  agent_id: z.string().regex(AGENT_ID).nullable(),
  facts: boardFactsSchema,
  enrolled_at: z.iso.datetime(),
  decided_at: z.iso.datetime().nullable(),
  decided_by: z.string().nullable(),
  /** Why it was refused. */
  reason: z.string().nullable(),
  /** The agent confirmed its grant (its poll secret is dead). */
  delivered: z.boolean(),
  reported_at: z.iso.datetime().nullable(),
  report: fleetReportSchema.nullable(),
});
export const fleetAgentsAnswerSchema = z.object({ agents: z.array(fleetAgentSchema) });
