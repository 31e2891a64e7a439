import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { BadRequest } from '../badRequest.js';
import type { FleetKeys } from './identityKey.js';

/** Makes an agent's broker login (agentMqtt.ts's AgentMqttLogins); throws with the reason when it cannot. */
export interface AgentLogins {
  setLogin(username: string, password: string): Promise<void>;
}

/** What the fleet's routes are given (server.fleet, loaded by root.ts); absent: every /fleet route answers 404. */
export interface FleetDeps {
  keys: FleetKeys;
  /** server.fleet.enrolCodeHours: how long a new code is good for, unless the request says otherwise. */
  enrolCodeHours: number;
  /** server.fleet.maxBundleMegabytes in bytes: the largest release bundle taken (DEFAULT_MAX_BUNDLE_BYTES when absent). */
  maxBundleBytes?: number;
  /** server.publicUrl: the grant's service_url, and the URL of the command a code is printed in. */
  publicUrl: string;
  /** The agents' broker logins (server.fleet.agentMqtt): the broker's URL as agents reach it; null: none given. */
  agentMqtt: { url: string; logins: AgentLogins } | null;
  /**
   * The problems of an agent's configuration version as the board's `config check` words them (`path: message`),
   * minus what only the board can know (the files it names, its devices); none when it passes. The root gives it
   * (the check is config/'s); absent, no version can be stored (routesAgentConfig.ts answers 503).
   */
  checkConfig?: (document: string, agentId: string) => string[];
}

const NO_FLEET = 'this service has no server.fleet section: enrolment and the fleet are off here (docs/fleet.md)';

/** The fleet's deps, or the 404 every /fleet route answers without them. */
export function fleetOf(deps: { fleet?: FleetDeps | undefined }): FleetDeps {
  if (deps.fleet === undefined) throw new BadRequest(NO_FLEET, 404);
  return deps.fleet;
}

/**
 * Without server.fleet, every /fleet route answers 404 with the reason, after the key check (a route that needs a
 * key still answers 401 without one). Register it after the key check.
 */
export function registerFleetGate(app: FastifyInstance, fleet: FleetDeps | undefined): void {
  if (fleet !== undefined) return;
  app.addHook('preHandler', async (request) => {
    if (request.routeOptions.url?.startsWith('/fleet/')) throw new BadRequest(NO_FLEET, 404);
  });
}

/** The path prefix of the fleet's routes: none changes what a door sees (server.ts spends no revision on them). */
export const FLEET_PATHS = '/fleet/';

/** The enrolment's path parameter of the fleet's routes. */
export const enrolmentParams = z.object({ enrolment_id: z.uuid('must be an enrolment id (a UUID)') });

/** The agent's path parameter of the fleet's routes (/fleet/agents/{agent_id}/...). */
export const agentParams = z.object({
  agent_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'an agent id: 1 to 64 letters, digits, _ or -')
    .describe("the agent's id (agent.id)"),
});
