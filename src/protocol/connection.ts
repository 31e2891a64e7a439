import { readFileSync } from 'node:fs';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import { readSecret, type Env } from '../util/secretFiles.js';
import type { MqttOptions } from './options.js';
import { backoffDelay, type BackoffOptions } from '../util/backoff.js';
import { DoorAgentError, describeFsError } from '../util/errors.js';
import { redactUrl } from '../util/redact.js';
import type { Topics } from './topics.js';
import { AVAILABILITY_OFFLINE } from './doorState.js';
import { withProps } from '../core/objects.js';

const MQTT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0.3 };

function readFileFor(keyPath: string, file: string | undefined): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (err) {
    throw new DoorAgentError(`${keyPath}: cannot read ${file}: ${describeFsError(err)}`, { cause: err });
  }
}

/**
 * Client options from an `mqtt` config section: MQTT 5 (or 3.1.1), TLS files, a password from a file or the
 * environment; the client id and last will are the caller's (the agent's availability, or none).
 */
export function clientOptions(config: MqttOptions, env: Env, identity: { clientId: string; will?: IClientOptions['will'] }): IClientOptions {
  return {
    protocolVersion: config.protocolVersion,
    clientId: identity.clientId,
    clean: true,
    keepalive: config.keepaliveSeconds,
    connectTimeout: 10_000,
    // mqtt.js's own reconnection has a fixed period; connectBroker schedules reconnects itself (backoff, jitter).
    reconnectPeriod: 0,
    username: config.username,
    password: readSecret('mqtt.passwordFile', config.passwordFile, env, 'DOOR_AGENT_MQTT_PASSWORD'),
    ca: readFileFor('mqtt.caFile', config.caFile),
    cert: readFileFor('mqtt.certFile', config.certFile),
    key: readFileFor('mqtt.keyFile', config.keyFile),
    // Never downgrade: a broker whose certificate is not trusted is refused, there is no plaintext retry.
    rejectUnauthorized: true,
    will: identity.will,
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
 * Connects, and reconnects after every loss with exponential backoff and jitter (reset once connected),
 * scheduled here with mqtt.js's documented `reconnectPeriod: 0` and `client.reconnect()`. Each outage is logged
 * once, with a clear line for a broker certificate that is not trusted.
 */
export function connectBroker(config: MqttOptions, topics: Topics, env: Env, logger: Logger): MqttClient {
  const will = { topic: topics.status, payload: Buffer.from(AVAILABILITY_OFFLINE), qos: 1 as const, retain: true };
  return connectWithBackoff(config.url, clientOptions(config, env, { clientId: `door-agent-${topics.agentId}`, will }), logger);
}

/** connect() with the reconnection and logging of connectBroker, for any client options (the service's too). */
export function connectWithBackoff(url: string, options: IClientOptions, logger: Logger, random: () => number = Math.random): MqttClient {
  const client = connect(url, withProps(options, { reconnectPeriod: 0 }));
  let attempt = 0;
  let down = false;
  let retry: NodeJS.Timeout | null = null;
  client.on('connect', () => {
    // Commands are small and latency matters: no Nagle delay on our side of the connection.
    (client.stream as { setNoDelay?: (on: boolean) => void } | undefined)?.setNoDelay?.(true);
    attempt = 0;
    if (down) logger.info({ broker: redactUrl(url) }, 'broker connection restored');
    down = false;
  });
  client.on('close', () => {
    if (client.disconnecting || client.disconnected) return; // our own graceful stop
    if (!down) logger.warn({ broker: redactUrl(url) }, 'broker connection lost; doors keep working, events are kept');
    down = true;
    if (retry !== null) return;
    retry = setTimeout(
      () => {
        retry = null;
        if (!client.disconnecting && !client.disconnected && !client.connected) client.reconnect();
      },
      backoffDelay(attempt++, MQTT_BACKOFF, random),
    );
    retry.unref();
  });
  client.on('end', () => {
    if (retry !== null) clearTimeout(retry);
    retry = null;
  });
  client.on('error', (error) => {
    const err = error as Error & { code?: string };
    if (err.code && TLS_CODES.has(err.code)) {
      logger.error(
        { broker: redactUrl(url), code: err.code },
        'broker certificate not trusted: refusing to connect (set mqtt.caFile to the CA that signed it)',
      );
    } else {
      logger.warn({ broker: redactUrl(url), err }, 'broker connection error');
    }
  });
  return client;
}
