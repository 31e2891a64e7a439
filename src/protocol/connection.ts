import { createHash, createHmac } from 'node:crypto';
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

/** The agent's words for an outage; a caller whose session means something else passes its own. */
const AGENT_CONNECTION_LOST = 'broker connection lost; doors keep working, events are kept';

function readFileFor(keyPath: string, file: string | undefined): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (err) {
    throw new DoorAgentError(`${keyPath}: cannot read ${file}: ${describeFsError(err)}`, { cause: err });
  }
}

/** What an `mqtt` section's files and environment give a connection, read once. */
interface BrokerCredentials {
  password: string | undefined;
  ca: Buffer | undefined;
  cert: Buffer | undefined;
  key: Buffer | undefined;
}

function readCredentials(config: MqttOptions, env: Env): BrokerCredentials {
  return {
    password: readSecret('mqtt.passwordFile', config.passwordFile, env, 'DOOR_AGENT_MQTT_PASSWORD'),
    ca: readFileFor('mqtt.caFile', config.caFile),
    cert: readFileFor('mqtt.certFile', config.certFile),
    key: readFileFor('mqtt.keyFile', config.keyFile),
  };
}

/** How many hex digits of the HMAC an owned client id carries (48 bits: too many to try at a broker). */
const OWNED_SUFFIX_HEX_DIGITS = 12;

/**
 * A stable client id no other broker user can guess, so none can take the session over (the broker drops the
 * client whose id a new connection uses): `<plainId>-<12 hex digits>` of HMAC-SHA256 keyed with the MQTT
 * password, else with the SHA-256 of the client certificate's private key file (its certificate file's without one).
 * It changes only with the credential.
 * Without either (an anonymous broker) there is nothing to key it with: the plain id.
 * @internal
 */
export function ownedClientId(plainId: string, credential: { password?: string; cert?: Buffer; key?: Buffer }): string {
  // The private key, not the certificate: a certificate is public (TLS 1.2 sends it in the clear).
  const secret = credential.key ?? credential.cert;
  const key = credential.password ?? (secret ? createHash('sha256').update(secret).digest() : undefined);
  if (key === undefined) return plainId;
  return `${plainId}-${createHmac('sha256', key).update(plainId).digest('hex').slice(0, OWNED_SUFFIX_HEX_DIGITS)}`;
}

/** ownedClientId with the credential of an `mqtt` section (the service's audit session). */
export function ownedClientIdFor(config: MqttOptions, env: Env, plainId: string): string {
  return ownedClientId(plainId, readCredentials(config, env));
}

function optionsWith(config: MqttOptions, credentials: BrokerCredentials, identity: { clientId: string; will?: IClientOptions['will'] }): IClientOptions {
  return {
    protocolVersion: config.protocolVersion,
    clientId: identity.clientId,
    clean: true,
    keepalive: config.keepaliveSeconds,
    connectTimeout: 10_000,
    // mqtt.js's own reconnection has a fixed period; connectBroker schedules reconnects itself (backoff, jitter).
    reconnectPeriod: 0,
    username: config.username,
    password: credentials.password,
    ca: credentials.ca,
    cert: credentials.cert,
    key: credentials.key,
    // Never downgrade: a broker whose certificate is not trusted is refused, there is no plaintext retry.
    rejectUnauthorized: true,
    will: identity.will,
  };
}

/**
 * Client options from an `mqtt` config section: MQTT 5 (or 3.1.1), TLS files, a password from a file or the
 * environment; the client id and last will are the caller's (the agent's availability, or none).
 */
export function clientOptions(config: MqttOptions, env: Env, identity: { clientId: string; will?: IClientOptions['will'] }): IClientOptions {
  return optionsWith(config, readCredentials(config, env), identity);
}

/** Certificates a CA given to mqtt.caFile would make good. */
const UNTRUSTED_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

type ConnectionError = Error & { code?: string | number; host?: string };

function hostOf(url: string, err: ConnectionError): string {
  if (typeof err.host === 'string' && err.host !== '') return err.host;
  try {
    return new URL(url).hostname;
  } catch {
    return '(the broker)';
  }
}

/** Logs a refused connection attempt: a certificate at error with what to do (no retry mends it), the rest at warn. */
function logRefusal(logger: Logger, url: string, err: ConnectionError): void {
  const fields = { broker: redactUrl(url), code: err.code };
  if (err.code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    const host = hostOf(url, err);
    logger.error(fields, `the broker's certificate does not name ${host}: connect by a name it carries (its subjectAltName), or issue it for this name`);
  } else if (err.code === 'CERT_HAS_EXPIRED') {
    logger.error(fields, "the broker's certificate has expired: refusing to connect (renew it, or check this machine's clock)");
  } else if (typeof err.code === 'string' && UNTRUSTED_CODES.has(err.code)) {
    logger.error(fields, 'broker certificate not trusted: refusing to connect (set mqtt.caFile to the CA that signed it)');
  } else {
    logger.warn({ broker: redactUrl(url), err }, 'broker connection error');
  }
}

/**
 * Connects, and reconnects after every loss with exponential backoff and jitter (reset once connected),
 * scheduled here with mqtt.js's documented `reconnectPeriod: 0` and `client.reconnect()`. The agent's client id
 * is owned (ownedClientId: no other broker user can take its session over), logged at the first connect.
 */
export function connectBroker(config: MqttOptions, topics: Topics, env: Env, logger: Logger): MqttClient {
  const will = { topic: topics.status, payload: Buffer.from(AVAILABILITY_OFFLINE), qos: 1 as const, retain: true };
  const credentials = readCredentials(config, env);
  const clientId = ownedClientId(`door-agent-${topics.agentId}`, credentials);
  const client = connectWithBackoff(config.url, optionsWith(config, credentials, { clientId, will }), logger, { lostMessage: AGENT_CONNECTION_LOST });
  client.once('connect', () => logger.info({ clientId }, 'the broker knows this agent by this client id'));
  return client;
}

/**
 * connect() with the reconnection of connectBroker, for any client options (the service's too). Each outage is
 * logged once where it starts: `lostMessage` (the caller's words) for a connection lost, with its cause, or the
 * refusal of an attempt (a certificate not trusted, or not for this host, a login refused, no broker listening);
 * the retries that follow log each other refusal once, until a connection is made again.
 */
export function connectWithBackoff(
  url: string,
  options: IClientOptions,
  logger: Logger,
  outage: { lostMessage?: string; random?: () => number } = {},
): MqttClient {
  const lostMessage = outage.lostMessage ?? 'broker connection lost';
  const random = outage.random ?? Math.random;
  const client = connect(url, withProps(options, { reconnectPeriod: 0 }));
  let attempt = 0;
  /** A connection the broker accepted is up. */
  let live = false;
  /** Since a connection was lost or refused, until one is made again. */
  let down = false;
  /** The error that ends the live connection, told with its loss. */
  let lostCause: ConnectionError | null = null;
  /** The refusals logged in this outage (by code or message), each once. */
  const told = new Set<string>();
  let retry: NodeJS.Timeout | null = null;
  client.on('connect', () => {
    // Commands are small and latency matters: no Nagle delay on our side of the connection.
    (client.stream as { setNoDelay?: (on: boolean) => void } | undefined)?.setNoDelay?.(true);
    attempt = 0;
    live = true;
    if (down) logger.info({ broker: redactUrl(url) }, 'broker connection restored');
    down = false;
    told.clear();
  });
  client.on('close', () => {
    if (client.disconnecting || client.disconnected) return; // our own graceful stop
    if (live) logger.warn(Object.assign({ broker: redactUrl(url) }, lostCause ? { err: lostCause } : {}), lostMessage);
    live = false;
    lostCause = null;
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
    const err = error as ConnectionError;
    if (live) {
      // A connection already going down (a reset, a keepalive timeout) is told once, by its loss.
      if (client.stream?.destroyed) lostCause = err;
      else logger.warn({ broker: redactUrl(url), err }, 'broker connection error');
      return;
    }
    const kind = String(err.code ?? err.message);
    if (told.has(kind)) return;
    told.add(kind);
    logRefusal(logger, url, err);
  });
  return client;
}
