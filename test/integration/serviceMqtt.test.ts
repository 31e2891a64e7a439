import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { StoredLink } from '../../src/service/linkStore.js';
import { ServiceMqtt } from '../../src/service/doorsMqtt.js';
import type { DoorAgentError } from '../../src/util/errors.js';
import { tempDir } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { sleep, waitUntil } from '../support/wait.js';

async function eventually(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(200);
  }
}

const tmp = tempDir('door-agent-service-mqtt-');
afterAll(tmp.cleanup);

/** What the broker holds retained on `topic` (null: nothing), as a new subscriber sees it. */
async function retained(url: string, topic: string): Promise<Record<string, unknown> | null> {
  const client = await mqtt.connectAsync(url);
  const got = new Promise<string | null>((resolve) => {
    client.on('message', (_t, payload) => resolve(payload.toString()));
    setTimeout(() => resolve(null), 1000);
  });
  await client.subscribeAsync(topic);
  const text = await got;
  await client.endAsync();
  return text ? (JSON.parse(text) as Record<string, unknown>) : null;
}

describe("the service's guest-link messages on the broker", () => {
  const broker = new Mosquitto(join(tmp.path, 'broker'), undefined, true); // retained messages survive its restart
  afterAll(() => broker.stop());
  const link = {
    magic_link_id: '7',
    magic_token: 'GuestToken-0123456789abcdef',
    name: 'Visitor',
    email_list: ['g@example.org'],
    resource_id_list: [12],
    start_time: '2024-01-01 00:00:00',
    end_time: null,
  } as unknown as StoredLink;

  it('a revocation made while the broker was away reaches it on reconnect (the signed link is not left retained)', async () => {
    await broker.start();
    writeFileSync(join(tmp.path, 'secret'), 'a-command-secret-of-at-least-32-bytes\n');
    let live: StoredLink[] = [link];
    let revoked: string[] = [];
    const options = {
      url: broker.url,
      topicPrefix: 'da',
      commandSecretFile: join(tmp.path, 'secret'),
      commandMaxAgeSeconds: 30,
      maxGuestLinks: 500,
      keepaliveSeconds: 5,
      protocolVersion: 5 as const,
      homeAssistant: { discovery: false, prefix: 'ha' },
    };
    const service = new ServiceMqtt(
      options as never,
      {},
      pino({ level: 'silent' }),
      () => live,
      () => revoked,
    );
    try {
      await eventually(async () => (await retained(broker.url, 'da/guest-links/7'))?.magic_token === link.magic_token, 10_000, 'the link retained');
      const published = (await retained(broker.url, 'da/guest-links/7'))!;
      // The signed index of the live links (the doors' reconcile path in signed mode), after the link itself.
      await eventually(async () => JSON.stringify((await retained(broker.url, 'da/guest-link-index'))?.ids) === '["7"]', 10_000, 'the index retained');
      expect((await retained(broker.url, 'da/guest-link-index'))!.signature).toEqual(expect.any(String));
      await broker.stop(); // the service loses the broker
      live = [];
      revoked = ['7']; // the guest is removed meanwhile: the service records the revocation
      service.revokeGuestLink('7');
      await broker.start();
      await eventually(async () => (await retained(broker.url, 'da/guest-links/7'))?.revoked === true, 15_000, 'the tombstone retained after the reconnect');
      const tombstone = (await retained(broker.url, 'da/guest-links/7'))!;
      // Strictly newer than the link, even within the same second: a replay of the link is stale at every door.
      expect(tombstone.issued_at as number).toBeGreaterThan(published.issued_at as number);
      expect(tombstone.signature).toEqual(expect.any(String));
      await eventually(
        async () => JSON.stringify((await retained(broker.url, 'da/guest-link-index'))?.ids) === '[]',
        10_000,
        'the index without the revoked link',
      );
    } finally {
      await service.close();
    }
  }, 40_000);

  it('refuses a command secret shorter than 32 bytes: exit 78 naming the file, never the secret', () => {
    const file = join(tmp.path, 'short-secret');
    writeFileSync(file, 'a-command-secret\n');
    const options = {
      url: broker.url,
      topicPrefix: 'dd',
      commandSecretFile: file,
      commandMaxAgeSeconds: 30,
      maxGuestLinks: 500,
      keepaliveSeconds: 5,
      protocolVersion: 5 as const,
      homeAssistant: { discovery: false, prefix: 'ha' },
    };
    let error: DoorAgentError | undefined;
    try {
      new ServiceMqtt(
        options as never,
        {},
        pino({ level: 'silent' }),
        () => [],
        () => [],
      );
    } catch (err) {
      error = err as DoorAgentError;
    }
    expect(error?.exitCode).toBe(78);
    expect(error?.message).toBe(
      `mqtt.commandSecretFile: ${file} holds a secret of 16 bytes; it must be at least 32 bytes (for example: openssl rand -hex 32 > ${file})`,
    );
  });

  it('an update and a revocation within one second carry increasing issued_at', async () => {
    await broker.start();
    const seen: number[] = [];
    const watcher = await mqtt.connectAsync(broker.url);
    watcher.on('message', (_t, payload) => payload.length > 0 && seen.push((JSON.parse(payload.toString()) as { issued_at: number }).issued_at));
    await watcher.subscribeAsync('db/guest-links/9');
    writeFileSync(join(tmp.path, 'secret'), 'a-command-secret-of-at-least-32-bytes\n');
    const options = {
      url: broker.url,
      topicPrefix: 'db',
      commandSecretFile: join(tmp.path, 'secret'),
      commandMaxAgeSeconds: 30,
      maxGuestLinks: 500,
      keepaliveSeconds: 5,
      protocolVersion: 5 as const,
      homeAssistant: { discovery: false, prefix: 'ha' },
    };
    const service = new ServiceMqtt(
      options as never,
      {},
      pino({ level: 'silent' }),
      () => [],
      () => [],
    );
    try {
      await sleep(1000);
      const nine = { ...link, magic_link_id: '9' } as unknown as StoredLink;
      service.publishGuestLink(nine);
      service.publishGuestLink({ ...nine, email_list: [] } as unknown as StoredLink);
      service.revokeGuestLink('9');
      await waitUntil(() => seen.length === 3, 5000, 'three messages');
      expect(seen[1]!).toBeGreaterThan(seen[0]!);
      expect(seen[2]!).toBeGreaterThan(seen[1]!);
    } finally {
      await service.close();
      await watcher.endAsync();
    }
  });

  it('signs every live link and revocation again on its own schedule (daily), so doors keep them within guestLinkMaxAgeSeconds', async () => {
    await broker.start();
    writeFileSync(join(tmp.path, 'secret'), 'a-command-secret-of-at-least-32-bytes\n');
    const options = {
      url: broker.url,
      topicPrefix: 'dc',
      commandSecretFile: join(tmp.path, 'secret'),
      commandMaxAgeSeconds: 30,
      maxGuestLinks: 500,
      keepaliveSeconds: 5,
      protocolVersion: 5 as const,
      homeAssistant: { discovery: false, prefix: 'ha' },
    };
    const service = new ServiceMqtt(
      options as never,
      {},
      pino({ level: 'silent' }),
      () => [link],
      () => ['8'],
      400,
    );
    try {
      await eventually(async () => (await retained(broker.url, 'dc/guest-links/7')) !== null, 10_000, 'the link retained');
      const first = (await retained(broker.url, 'dc/guest-links/7'))!.issued_at as number;
      const firstTombstone = (await retained(broker.url, 'dc/guest-links/8'))!.issued_at as number;
      await eventually(async () => ((await retained(broker.url, 'dc/guest-links/7'))!.issued_at as number) > first, 10_000, 'the link signed again');
      expect((await retained(broker.url, 'dc/guest-links/8'))!.issued_at as number).toBeGreaterThan(firstTombstone);
    } finally {
      await service.close();
    }
  });
});
