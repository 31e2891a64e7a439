import * as z from 'zod';
import { firmwareTaskSchema, fleetReportSchema, releaseManifestSchema, signatureSchema } from './fleet.js';

/**
 * The service's answers about releases, rollouts and reader firmware (docs/fleet.md, "Signed updates" and "Reader
 * firmware"; docs/reference-service.md, "The fleet"): what an operator reads and writes with an ADMIN key.
 */

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const at = z.iso.datetime().describe('when, UTC (ISO 8601)');
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

/** One stored release bundle: its signed manifest, the release key's signature, where it is fetched. */
const releaseSchema = releaseManifestSchema.extend({
  signature: signatureSchema.describe("the release key's (purpose `release`, over version, arch, sha256 and size)"),
  bundle_path: z.string().describe('GET it with an ADMIN key, or the DOOR key of an agent offered it'),
  uploaded_at: at,
  uploaded_by: z.string(),
});
/** GET /fleet/releases. */
export const releasesAnswerSchema = z.object({ releases: z.array(releaseSchema).describe('every release, the newest upload first') });
/** PUT /fleet/releases/{version}/{arch}. */
export const releaseStoredSchema = z.object({ success: z.string(), release: releaseSchema });

/** The stages of a rollout: its agents' three, then where it ended. */
const rolloutStageSchema = z.enum(['canary', 'share', 'all', 'done', 'stopped']);

/** Where one agent stands in a rollout. */
const rolloutAgentSchema = z.object({
  agent_id: z.string().regex(AGENT_ID),
  stage: z.enum(['canary', 'share', 'all']).describe('the stage it belongs to'),
  state: z
    .enum(['waiting', 'offered', 'downloading', 'installing', 'healthy', 'rolled_back', 'refused', 'failed'])
    .describe('waiting (not offered yet), offered (at its last exchange), then as the agent reports it'),
  detail: z.string().describe('what the agent said of it'),
  updated_at: at,
});

/** One rollout as GET /fleet/rollouts lists it. */
const rolloutSummarySchema = z.object({
  rollout_id: z.number().int().positive(),
  version: releaseManifestSchema.shape.version,
  stage: rolloutStageSchema.describe('the stage offered now; done once every agent reported healthy; stopped at the first failure or by an operator'),
  canary: z.string().regex(AGENT_ID),
  share_percent: z.number().int(),
  allow_downgrade: z.boolean().describe('always false: a rollout never takes a board to an older version'),
  health_bound_seconds: z.number().int(),
  created_at: at,
  created_by: z.string(),
  stopped_reason: z.string().nullable().describe("why it stopped: the agent and what it reported, or the operator's reason"),
});
/** GET /fleet/rollouts. */
export const rolloutsAnswerSchema = z.object({ rollouts: z.array(rolloutSummarySchema).describe('every rollout, the newest first') });
/** GET /fleet/rollouts/{rollout_id}, and the answer of POST /fleet/rollouts and of its stop. */
export const rolloutAnswerSchema = rolloutSummarySchema.extend({
  agents: z.array(rolloutAgentSchema).describe('every agent of the rollout, by stage then id'),
});

/** POST /fleet/files: the firmware file stored. */
export const fileStoredSchema = z.object({ file_id: z.number().int().positive(), name: z.string(), sha256, size: z.number().int().positive() });

/** One reader firmware task as the operator lists it. */
export const fleetTaskSchema = z.object({
  task_id: z.number().int().positive(),
  agent_id: z.string().regex(AGENT_ID),
  kind: firmwareTaskSchema.shape.kind,
  readers: firmwareTaskSchema.shape.readers,
  file: fileStoredSchema,
  state: z.enum(['waiting', 'running', 'done', 'failed']).describe('waiting until the agent reports it running, then done or failed'),
  detail: fleetReportSchema.shape.tasks.unwrap().element.shape.detail.describe('what the agent said of it'),
  created_at: at,
  created_by: z.string(),
  updated_at: at,
});
/** GET /fleet/agents/{agent_id}/tasks. */
export const fleetTasksAnswerSchema = z.object({ tasks: z.array(fleetTaskSchema).describe('the newest first') });
