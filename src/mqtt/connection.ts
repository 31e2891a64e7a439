import { readFileSync } from 'node:fs';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { readSecret, type Env } from '../config/secrets.js';
import { backoffDelay, type BackoffOptions } from '../util/backoff.js';
import { DoorAgentError, describeFsError } from '../util/errors.js';
import { redactUrl } from '../util/redact.js';
import type { Topics } from './topics.js';

export const MQTT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0.3 };

type MqttConfig = NonNullable<Config['mqtt']>;

function readFileFor(keyPath: string, file: string | undefined): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (err) {
    throw new DoorAgentError(`${keyPath}: cannot read ${file}: ${describeFsError(err)}`, { cause: err });
  }
}

/** Client options from the `mqtt` config: MQTT 5, TLS files, password from a file or the environment, last will. */
export function clientOptions(config: MqttConfig, topics: Topics, env: Env): IClientOptions {
  return {
    protocolVersion: config.protocolVersion,
    clientId: `door-agent-${topics.agentId}`,
    clean: true,
    keepalive: config.keepaliveSeconds,
    connectTimeout: 10_000,
    reconnectPeriod: MQTT_BACKOFF.initialMs,
    username: config.username,
    password: readSecret('mqtt.passwordFile', config.passwordFile, env, 'DOOR_AGENT_MQTT_PASSWORD'),
    ca: readFileFor('mqtt.caFile', config.caFile),
    cert: readFileFor('mqtt.certFile', config.certFile),
    key: readFileFor('mqtt.keyFile', config.keyFile),
    // Never downgrade: a broker whose certificate is not trusted is refused, there is no plaintext retry.
    rejectUnauthorized: true,
    will: { topic: topics.status, payload: Buffer.from('offline'), qos: 1, retain: true },
  };
}

const TLS_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Connects with reconnection backoff (exponential with jitter, reset once connected) and logs each outage once,
 * with a clear line for a broker certificate that is not trusted.
 */
export function connectBroker(config: MqttConfig, topics: Topics, env: Env, logger: Logger): MqttClient {
  const client = connect(config.url, clientOptions(config, topics, env));
  let attempt = 0;
  let down = false;
  client.on('connect', () => {
    // Commands are small and latency matters: no Nagle delay on our side of the connection.
    (client.stream as { setNoDelay?: (on: boolean) => void } | undefined)?.setNoDelay?.(true);
    attempt = 0;
    client.options.reconnectPeriod = MQTT_BACKOFF.initialMs;
    if (down) logger.info({ broker: redactUrl(config.url) }, 'broker connection restored');
    down = false;
  });
  client.on('close', () => {
    if (client.disconnecting) return; // our own graceful stop
    client.options.reconnectPeriod = backoffDelay(attempt++, MQTT_BACKOFF);
    if (!down) logger.warn({ broker: redactUrl(config.url) }, 'broker connection lost; doors keep working, events are kept');
    down = true;
  });
  client.on('error', (error) => {
    const err = error as Error & { code?: string };
    if (err.code && TLS_CODES.has(err.code)) {
      logger.error(
        { broker: redactUrl(config.url), code: err.code },
        'broker certificate not trusted: refusing to connect (set mqtt.caFile to the CA that signed it)',
      );
    } else {
      logger.warn({ broker: redactUrl(config.url), err }, 'broker connection error');
    }
  });
  return client;
}
