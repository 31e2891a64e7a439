import { createHash, type KeyObject } from 'node:crypto';
import { fleetSignatureMatches } from '../protocol/fleetSigning.js';
import type { KeptConfig } from './appliedConfig.js';

/**
 * Whether a configuration version is the service's, for this agent, as signed (docs/fleet.md, "Configuration from
 * the service"): the signature (purpose 'config') by the service's identity key (fleet.servicePublicKeyFile), the
 * agent id ours, the document's SHA-256 the one signed. Null when it is; else why not, in one sentence.
 */
export function deliveryProblem(config: KeptConfig, serviceKey: KeyObject, agentId: string): string | null {
  const { signature, ...signed } = config;
  if (!fleetSignatureMatches(serviceKey, 'config', signed, signature)) {
    return `configuration version ${config.version}: the signature does not verify with the service's key (fleet.servicePublicKeyFile): not the service this agent enrolled with, or altered on the way`;
  }
  if (config.agent_id !== agentId) {
    return `configuration version ${config.version} is for agent ${config.agent_id}, not this one (agent.id ${agentId})`;
  }
  const sha256 = createHash('sha256').update(config.document, 'utf8').digest('hex');
  if (sha256 !== config.sha256) {
    return `configuration version ${config.version}: the document's SHA-256 is ${sha256}, not the ${config.sha256} signed`;
  }
  return null;
}
