import { createHash } from 'node:crypto';
import { canonicalJson } from '../protocol/signing.js';
import { redactUrl } from '../util/redact.js';
import type { AgentOptions } from './options.js';

/**
 * What config_changed names a configuration by: the SHA-256 (hex) of the normalized configuration as the agent
 * uses it (every default applied; canonical JSON, keys sorted). Never a secret: secrets live in files named by
 * path (service.apiKeyFile, mqtt.passwordFile, mqtt.commandSecretFile, reader.scbkFile, ...), and only the paths
 * are hashed, never what the files hold; a user:password in a URL is replaced first.
 */
export function configHash(config: AgentOptions): string {
  const safe: AgentOptions = {
    ...config,
    ...(config.mqtt ? { mqtt: { ...config.mqtt, url: redactUrl(config.mqtt.url) } } : {}),
    ...(config.service ? { service: { ...config.service, baseUrl: redactUrl(config.service.baseUrl) } } : {}),
  };
  return createHash('sha256').update(canonicalJson(safe)).digest('hex');
}
