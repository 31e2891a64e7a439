import type { FastifyRequest } from 'fastify';
import { keyDigest } from '../apiKeys.js';
import { BadRequest } from '../badRequest.js';
import type { FleetAgents } from './fleetAgents.js';

/**
 * Who may fetch what the fleet hands an agent (a release bundle, a firmware file): an ADMIN or SUPER key, or the
 * DOOR key of the adopted agent `allowed` says may have it now. Answers the agent's id (null for an operator's key);
 * a 403 naming why otherwise.
 */
export async function operatorOrAgent(
  request: FastifyRequest,
  agents: FleetAgents,
  what: string,
  allowed: (agentId: string) => Promise<boolean>,
): Promise<string | null> {
  if (request.rank === 'ADMIN' || request.rank === 'SUPER') return null;
  if (request.rank !== 'DOOR') throw new BadRequest(`${what} takes an ADMIN key, or the DOOR key of an agent it is meant for (this key: ${request.rank})`, 403);
  const key = request.keyGiven?.key;
  const agentId = key ? await agents.agentOfKeyDigest(keyDigest(key)) : null;
  if (agentId === null) throw new BadRequest(`${what}: this DOOR key is not an adopted agent's own`, 403);
  if (!(await allowed(agentId))) throw new BadRequest(`${what} is not meant for agent ${agentId} now`, 403);
  return agentId;
}
