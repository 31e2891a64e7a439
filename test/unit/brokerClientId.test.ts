import { createHash, createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ownedClientId, ownedClientIdFor } from '../../src/protocol/connection.js';
import type { MqttOptions } from '../../src/protocol/options.js';
import { tempDir } from '../support/cli.js';

// The stable client ids (the agent's, the service's audit session) carry a suffix only the credential's owner can
// compute, so another broker user cannot connect with them and take the session over (docs/mqtt.md, "Client ids").
const tmp = tempDir('door-agent-client-id-');
afterAll(tmp.cleanup);

const PLAIN = 'door-agent-lobby-pi';

function mqttSection(files: { passwordFile?: string; certFile?: string } = {}): MqttOptions {
  return {
    url: 'mqtt://broker.lan',
    username: 'lobby-pi',
    ...files,
    topicPrefix: 'door-agent',
    commandMaxAgeSeconds: 30,
    maxGuestLinks: 500,
    guestLinkMaxAgeSeconds: 7 * 86_400,
    futureSkewSeconds: 300,
    retainedMaxAgeSeconds: 86_400,
    keepaliveSeconds: 30,
    protocolVersion: 5,
    homeAssistant: { discovery: false, prefix: 'homeassistant' },
  };
}

function file(name: string, content: string): string {
  const path = join(tmp.path, name);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
}

describe('the owned client id', () => {
  it('is the plain id and the first 12 hex digits of HMAC-SHA256(the MQTT password, the plain id)', () => {
    const id = ownedClientIdFor(mqttSection({ passwordFile: file('password', 'agent-secret\n') }), {}, PLAIN);
    const expected = createHmac('sha256', 'agent-secret').update(PLAIN).digest('hex').slice(0, 12);
    expect(id).toBe(`${PLAIN}-${expected}`);
    expect(id).toMatch(/^door-agent-lobby-pi-[0-9a-f]{12}$/);
  });

  it('is the same at every start with the same credential, and another with another password', () => {
    const first = ownedClientIdFor(mqttSection({ passwordFile: file('same', 'agent-secret\n') }), {}, PLAIN);
    const again = ownedClientIdFor(mqttSection({ passwordFile: file('same-again', 'agent-secret') }), {}, PLAIN);
    const rotated = ownedClientIdFor(mqttSection({ passwordFile: file('rotated', 'agent-secret-2\n') }), {}, PLAIN);
    expect(again).toBe(first);
    expect(rotated).not.toBe(first);
    expect(rotated.startsWith(`${PLAIN}-`)).toBe(true);
  });

  it('takes the password of DOOR_AGENT_MQTT_PASSWORD as the agent does for its login', () => {
    const fromEnv = ownedClientIdFor(mqttSection(), { DOOR_AGENT_MQTT_PASSWORD: 'agent-secret' }, PLAIN);
    expect(fromEnv).toBe(ownedClientId(PLAIN, { password: 'agent-secret' }));
  });

  it('without a password, is keyed with the SHA-256 of the client certificate file, and differs per certificate', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIBfake1\n-----END CERTIFICATE-----\n';
    const id = ownedClientIdFor(mqttSection({ certFile: file('client.crt', pem) }), {}, PLAIN);
    const key = createHash('sha256').update(pem).digest();
    expect(id).toBe(`${PLAIN}-${createHmac('sha256', key).update(PLAIN).digest('hex').slice(0, 12)}`);
    const other = ownedClientIdFor(mqttSection({ certFile: file('other.crt', pem.replace('fake1', 'fake2')) }), {}, PLAIN);
    expect(other).not.toBe(id);
  });

  it('with a client certificate and its key, is keyed with the SHA-256 of the key file (a certificate is public)', () => {
    const keyPem = '-----BEGIN PRIVATE KEY-----\nMIIEkey1\n-----END PRIVATE KEY-----\n';
    const config = { ...mqttSection({ certFile: file('pair.crt', 'a certificate') }), keyFile: file('pair.key', keyPem) };
    const key = createHash('sha256').update(keyPem).digest();
    expect(ownedClientIdFor(config, {}, PLAIN)).toBe(`${PLAIN}-${createHmac('sha256', key).update(PLAIN).digest('hex').slice(0, 12)}`);
  });

  it('with a password and a certificate, is keyed with the password', () => {
    const both = mqttSection({ passwordFile: file('both-password', 'agent-secret\n'), certFile: file('both.crt', 'a certificate') });
    expect(ownedClientIdFor(both, {}, PLAIN)).toBe(ownedClientId(PLAIN, { password: 'agent-secret' }));
  });

  it('is the plain id on an anonymous broker (no password, no client certificate): nothing to key it with', () => {
    expect(ownedClientIdFor(mqttSection(), {}, PLAIN)).toBe(PLAIN);
    expect(ownedClientId('door-agent-service-events-host-8080', {})).toBe('door-agent-service-events-host-8080');
  });

  it('differs per plain id under one login (the service: one session per host and port)', () => {
    const login = { password: 'service-secret' };
    const first = ownedClientId('door-agent-service-events-a-8080', login);
    const second = ownedClientId('door-agent-service-events-a-8081', login);
    expect(first.slice(-12)).not.toBe(second.slice(-12));
  });
});
