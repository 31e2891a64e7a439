import * as z from 'zod';
import { fleetReportSchema } from './fleet.js';

/**
 * The service's answers about an agent's configuration versions (docs/fleet.md, "Configuration from the service";
 * docs/reference-service.md, "The fleet"): what an operator reads and writes with an ADMIN key.
 */

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const at = z.iso.datetime().describe('when, UTC (ISO 8601)');

/** One stored version, without its document. */
const configVersionInfoSchema = z.object({
  version: z.number().int().positive(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .describe("the SHA-256 of the document's UTF-8 bytes"),
  created_at: at,
  created_by: z.string().describe('who stored it (the key rank or the console user)'),
  note: z.string().describe('the note given with it; a restore\'s is "restored from version N"'),
});

/** One stored version with its document, as GET /fleet/agents/{agent_id}/config/{version} answers it. */
export const configVersionAnswerSchema = configVersionInfoSchema.extend({
  agent_id: z.string().regex(AGENT_ID),
  document: z.string().describe('the YAML, as stored'),
});

/** PUT /fleet/agents/{agent_id}/config and its restore: the version stored. */
export const configStoredSchema = configVersionInfoSchema.extend({ agent_id: z.string().regex(AGENT_ID), success: z.string() });

/** GET /fleet/agents/{agent_id}/config: the current version, every version, and what the agent last reported of them. */
export const agentConfigAnswerSchema = z.object({
  agent_id: z.string().regex(AGENT_ID),
  current: configVersionAnswerSchema.nullable().describe('the newest version; null before the first is stored'),
  versions: z.array(configVersionInfoSchema).describe('every version, the newest first'),
  reported: z
    .object({
      at,
      version: fleetReportSchema.shape.version.describe("the agent's program version"),
      config: fleetReportSchema.shape.config.unwrap().nullable().describe('what it applied, how, and the last version it refused with its problems'),
    })
    .nullable()
    .describe("the agent's last report; null before its first"),
});
