import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectAsync, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrolAnswerSchema, enrolmentStateSchema, parseEnrolCode, type BoardFacts } from '../../src/api/fleet.js';
import { parseServiceConfig } from '../../src/config/load.js';
import { signFleet } from '../../src/protocol/fleetSigning.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { launchChromium } from '../support/browser.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import { fleetDocument } from '../support/fleetDocument.js';

// The fleet in the operator's console (issue 54 item 5), in a real Chromium: the service's own composition root
// in this process (server.fleet, its console, its broker connection to a real mosquitto), boards played over HTTP
// as `door-agent enrol` and the agent's exchange play them, an agent heard over MQTT as a daemon publishes. The
// service's wall clock is this one plus `ahead` (moved forward to make a configuration late). One browser, one
// service for the file.
const tmp = tempDir('door-agent-console-fleet-');
const release = generateKeyPairSync('ed25519');
let ahead = 0;
const clock = { wallNow: () => Date.now() + ahead, monoNow: () => performance.now() };
let broker: Mosquitto;
let mqtt: MqttClient;
let service: RunningService;
let browser: Browser;
let admin: BrowserContext;
let page: Page;
let base: string;
const keys = { ADMIN: '', REGULAR: '' };
/** The DOOR keys the adopted boards were granted. */
const granted: Record<string, string> = {};

const facts = (hostname: string): BoardFacts => ({
  hostname,
  version: '0.1.0',
  arch: 'arm64',
  node: 'v20.19.0',
  gpio_chips: ['/dev/gpiochip0', '/dev/gpiochip4'],
  serial_devices: ['/dev/serial/by-id/usb-FTDI_FT232R-if00-port0', '/dev/ttyAMA0'],
});

const document = (unlockSeconds: number, extra = '') => fleetDocument(unlockSeconds, extra);

/** An instant as the console shows it, in the site's zone: "2026-11-29 14:05:09 CET" (Europe/Berlin). */
function inBerlin(at: string): string {
  const ms = Date.parse(at);
  const wall = new Intl.DateTimeFormat('sv-SE', { timeZone: 'Europe/Berlin', dateStyle: 'short', timeStyle: 'medium', hourCycle: 'h23' }).format(ms);
  const zone = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', timeZoneName: 'short' }).formatToParts(ms).find((p) => p.type === 'timeZoneName');
  return `${wall} ${zone!.value}`;
}

async function http(method: string, path: string, options: { key?: string; body?: unknown; raw?: Buffer } = {}) {
  const headers: Record<string, string> = {};
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.raw) headers['content-type'] = 'application/octet-stream';
  const res = await fetch(`${base}${path}`, { method, headers, body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)) });
  const body = (await res.json()) as Record<string, unknown>;
  expect(res.status, `${method} ${path}: ${JSON.stringify(body)}`).toBe(200);
  return body;
}

/** A board enrols with a code, as `door-agent enrol URL CODE` does: its enrolment id and poll secret. */
async function enrol(code: string, hostname: string): Promise<{ id: string; poll: string }> {
  const { accepted } = enrolAnswerSchema.parse(await http('POST', '/fleet/enrol', { body: { secret: parseEnrolCode(code)!.secret, facts: facts(hostname) } }));
  return { id: accepted.enrolment_id, poll: accepted.poll_secret };
}

/** A board's poll of its enrolment (with its poll secret), as the board asks until an operator decides. */
async function poll(board: { id: string; poll: string }) {
  const res = await fetch(`${base}/fleet/enrolments/${board.id}`, { headers: { authorization: `Bearer ${board.poll}` } });
  return enrolmentStateSchema.parse(await res.json());
}

/** Takes the grant of an adopted board and confirms it, as the board does: its own DOOR key, kept in `granted`. */
async function takeGrant(board: { id: string; poll: string }): Promise<string> {
  const state = await poll(board);
  if (state.state !== 'adopted') throw new Error(`enrolment ${board.id} is ${state.state}`);
  await http('POST', `/fleet/enrolments/${board.id}/confirm`, { key: state.grant.api_key });
  granted[state.grant.agent_id] = state.grant.api_key;
  return state.grant.agent_id;
}

/** An agent heard over MQTT, as the daemon publishes: its retained availability and health (`health`: what differs). */
async function publishAgent(id: string, online: boolean, health: Record<string, unknown> = {}): Promise<void> {
  const message = {
    at: new Date().toISOString(),
    uptime_s: 60,
    version: '0.1.0',
    outbox_depth: 0,
    cache: { revision: 3, age_s: 12 },
    readers: { online: 1, total: 1, per_door: {} },
    clock_trusted: true,
    doors: [],
    memory: { rss: 1, heap_used: 1 },
    event_loop_lag_p99_ms: null,
    ...health,
  };
  await mqtt.publishAsync(`site/agents/${id}/health`, JSON.stringify(message), { retain: true, qos: 1 });
  await mqtt.publishAsync(`site/agents/${id}/status`, online ? 'online' : 'offline', { retain: true, qos: 1 });
}

async function signIn(context: BrowserContext, key: string): Promise<Page> {
  const p = await context.newPage();
  p.on('dialog', (d) => void d.accept());
  await p.goto(`${base}/console`);
  await p.getByLabel('API key').fill(key);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.waitForURL(/\/console\/people$/);
  return p;
}

const flash = (p: Page) => p.locator('.flash').first().textContent();

/** The page's form controls, buttons and links without an accessible name (run in the page: this project's test types have no DOM). */
const unnamedControls = (p: Page) =>
  p.evaluate(`(() => {
    const text = (el) => (el ? el.textContent.trim() : '');
    const named = (el) => (el.getAttribute('aria-label') || '').trim() !== '' || Array.from(el.labels || []).some((l) => text(l) !== '') ||
      ((el.tagName === 'BUTTON' || el.tagName === 'A') && text(el) !== '');
    return Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button, a[href]')).filter((el) => !named(el)).map((el) => el.outerHTML.slice(0, 120));
  })()`);

beforeAll(async () => {
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const keyDir = join(tmp.path, 'keys');
  mkdirSync(keyDir, { recursive: true, mode: 0o700 });
  const identity = generateKeyPairSync('ed25519');
  writeFileSync(join(keyDir, 'identity.key'), identity.privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  writeFileSync(join(keyDir, 'release.pub'), release.publicKey.export({ format: 'pem', type: 'spki' }), { mode: 0o644 });
  const config = parseServiceConfig(
    `server:
  listen: 127.0.0.1:${port}
  publicUrl: ${base}
  dataDir: ${tmp.path}/svc
  timezone: Europe/Berlin
  resources: [ { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door } ]
  console: { enabled: true }
  fleet: { identityKeyFile: ${keyDir}/identity.key, releasePublicKeyFile: ${keyDir}/release.pub }
mqtt: { url: "${broker.url}", topicPrefix: site }
`,
    'consoleFleet.yaml',
  );
  service = await startService(config, { clock, logger: pino({ level: 'silent' }), env: {} });
  const apiKeys = new ApiKeys(service.db);
  keys.ADMIN = await apiKeys.create('ADMIN', 0, clock.wallNow());
  keys.REGULAR = await apiKeys.create('REGULAR', 0, clock.wallNow());
  mqtt = await connectAsync(broker.url, { clientId: `console-fleet-${process.pid}`, reconnectPeriod: 0 });
  browser = await launchChromium();
  admin = await browser.newContext();
  await admin.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page = await signIn(admin, keys.ADMIN);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await mqtt?.endAsync();
  await service?.stop();
  await broker?.stop();
  tmp.cleanup();
});

describe('the fleet in the console', () => {
  it('a board enrolled with a code made on the Agents page is listed pending with what it reported, and adopted there', async () => {
    await page.goto(`${base}/console/agents`);
    await page.getByRole('button', { name: 'New enrolment code' }).click();
    const command = await page.getByLabel('Command').inputValue();
    expect(command).toMatch(new RegExp(`^door-agent enrol ${base} da1\\.[a-z2-7]{32}\\.[a-z2-7]{26}$`));
    expect(await page.locator('main').textContent()).toMatch(/works once, until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} CES?T/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.getByRole('status').last().textContent()).toBe('Copied.');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(command);

    const board = await enrol(command.split(' ').at(-1)!, 'lobby-pi.local');
    await page.goto(`${base}/console/agents`);
    expect(await page.locator('h1').textContent()).toBe('Agents: 1 needs attention');
    const row = page.locator(`#enrolment-${board.id}`);
    const shown = await row.textContent();
    for (const fact of ['lobby-pi.local', 'pending', '0.1.0', 'arm64', 'v20.19.0', '/dev/gpiochip0, /dev/gpiochip4', '/dev/ttyAMA0'])
      expect(shown).toContain(fact);
    // The host name proposed as its agent id; the operator names it.
    const field = page.getByLabel('Agent id for lobby-pi.local');
    expect(await field.inputValue()).toBe('lobby-pi');
    expect(await unnamedControls(page)).toEqual([]);
    await field.fill('lobby');
    await page.getByRole('button', { name: 'Adopt lobby-pi.local' }).click();
    await page.waitForURL(/\/console\/agents$/);
    expect(await flash(page)).toContain(`enrolment ${board.id} adopted as agent lobby`);
    expect(await page.locator('#agent-lobby').textContent()).toContain('adopted');
    expect(await takeGrant(board)).toBe('lobby');
  });

  it('a board refused on the Agents page is told why; nothing is granted', async () => {
    const board = await enrol(String((await http('POST', '/fleet/enrol-codes', { key: keys.ADMIN })).code), 'stranger.local');
    await page.goto(`${base}/console/agents`);
    await page.getByLabel('Reason for stranger.local').fill('not one of ours');
    await page.getByRole('button', { name: 'Refuse stranger.local' }).click();
    await page.waitForURL(/\/console\/agents$/);
    expect(await flash(page)).toContain(`enrolment ${board.id} refused`);
    expect(await page.locator(`#enrolment-${board.id}`).textContent()).toMatch(/refused.*by console: API key: not one of ours/s);
    expect(await poll(board)).toEqual({ state: 'refused', reason: 'not one of ours' });
  });

  it("an agent's configuration is saved on its page; a document that fails its check is refused with its problems and the text kept; a version restored", async () => {
    await page.goto(`${base}/console/agents`);
    await page.getByRole('link', { name: 'lobby', exact: true }).click();
    await page.waitForURL(/\/console\/agents\/lobby$/);
    const text = page.getByLabel('Configuration (YAML)');
    const save = async (doc: string, note: string) => {
      await text.fill(doc);
      await page.getByLabel('Note').fill(note);
      await page.getByRole('button', { name: 'Save' }).click();
      await page.waitForLoadState();
    };
    await save(document(5), 'first');
    expect(await flash(page)).toContain("version 1 of lobby's configuration stored");
    expect(await page.locator('#version-1').textContent()).toMatch(/1.*current.*console: API key.*first/s);

    const bad = document(5, '    relockOnClose: maybe\n').replace('pin: 17', 'pin: 99');
    await save(bad, 'broken');
    const refusal = page.getByRole('alert');
    expect(await refusal.textContent()).toContain('the configuration fails its check, nothing was stored');
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/agent.png`, fullPage: true });
    const problems = await refusal.locator('li').allTextContents();
    expect(problems.length).toBeGreaterThanOrEqual(2);
    expect(problems.join('\n')).toContain('doors[0].relay.pin: 99 is too large');
    expect(problems.join('\n')).toContain('doors[0].relockOnClose: "maybe" is not true or false');
    // What was typed is still there to correct, and nothing was stored.
    expect(await text.inputValue()).toBe(bad);
    expect(await unnamedControls(page)).toEqual([]);
    expect(await page.getByLabel('Note').inputValue()).toBe('broken');
    expect(await page.locator('#version-2').count()).toBe(0);

    await save(document(8), 'longer unlock');
    expect(await flash(page)).toContain("version 2 of lobby's configuration stored");
    await page.getByRole('button', { name: 'Restore version 1' }).click();
    await page.waitForURL(/\/console\/agents\/lobby$/);
    expect(await flash(page)).toContain("version 1 of lobby's configuration restored as version 3");
    expect(await page.locator('#version-3').textContent()).toContain('restored from version 1');
    expect(await text.inputValue()).toBe(document(5));
  });

  it('the Needs attention filter lists a refused configuration, one not applied for 3 poll intervals and an agent gone offline, live', async () => {
    // lobby applied version 3; garage adopted, its version 1 stored, not applied yet; shed heard over MQTT only.
    await http('POST', '/fleet/self/report', { key: granted.lobby, body: { version: '0.1.0', config: { applied: 3, refused: null, how: 'live' } } });
    const garage = await enrol(String((await http('POST', '/fleet/enrol-codes', { key: keys.ADMIN })).code), 'garage-pi');
    await http('POST', `/fleet/agents/${garage.id}/adopt`, { key: keys.ADMIN, body: { agent_id: 'garage' } });
    await takeGrant(garage);
    await http('PUT', '/fleet/agents/garage/config', { key: keys.ADMIN, body: { document: document(5) } });
    await publishAgent('shed', true);
    await page.goto(`${base}/console/agents`);
    await expect.poll(() => page.locator('#agent-shed').textContent()).toContain('online');
    expect(await page.locator('#agent-lobby').textContent()).toContain('v3 (current)');
    expect(await page.locator('#agent-garage').textContent()).toContain('configuration v1 to apply');
    await page.getByRole('link', { name: 'Needs attention (0)' }).click();
    expect(await page.locator('main').textContent()).toContain('No agent needs attention.');

    // A version the board's own check refuses (a file it names is missing there), as the agent reports it.
    await http('PUT', '/fleet/agents/lobby/config', { key: keys.ADMIN, body: { document: document(6) } });
    const problem = 'doors[0].reader.path: /dev/ttyUSB7 does not exist';
    await http('POST', '/fleet/self/report', {
      key: granted.lobby,
      body: { version: '0.1.0', config: { applied: 3, refused: { version: 4, problems: [problem] }, how: 'live' } },
    });
    ahead = 4 * 60_000; // 3 poll intervals of 60 s (the agent's default) have passed since garage's version 1
    await page.goto(`${base}/console/agents?attention=1`);
    expect(await page.locator('h1').textContent()).toBe('Agents: 2 need attention');
    expect(await page.locator('#agent-lobby').textContent()).toMatch(/v3 applied, v4 current.*refused v4.*refused configuration v4/s);
    expect(await page.locator('#agent-garage').textContent()).toContain('configuration v1 not applied after 4 min');
    expect(await page.locator('#agent-shed').count()).toBe(0);
    // shed goes offline: the page's live stream adds it.
    await publishAgent('shed', false);
    await expect.poll(() => page.locator('#agent-shed').textContent(), { timeout: 15_000 }).toContain('offline');
    await page.reload();
    expect(await page.locator('h1').textContent()).toBe('Agents: 3 need attention');
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/attention.png`, fullPage: true });
    expect(await page.getByRole('link', { name: 'All agents (4)' }).count()).toBe(1);
    // The agent's page shows the version it refused with its problems.
    await page.goto(`${base}/console/agents/lobby`);
    expect(await page.locator('#report-refused').textContent()).toContain(problem);
  });

  it('a rollout is started on the Rollouts page, followed on the Agents page, and stopped with a reason', async () => {
    const bundle = randomBytes(40_000);
    const manifest = { version: '0.2.0', arch: 'arm64', sha256: createHash('sha256').update(bundle).digest('hex'), size: bundle.length };
    const signature = signFleet(release.privateKey, 'release', manifest);
    await http('PUT', `/fleet/releases/0.2.0/arm64?signature=${encodeURIComponent(signature)}`, { key: keys.ADMIN, raw: bundle });

    await page.goto(`${base}/console/agents`);
    await page.getByRole('link', { name: 'Rollouts' }).click();
    await page.waitForURL(/\/console\/rollouts$/);
    expect(await page.locator('section', { hasText: 'Releases' }).locator('tbody').textContent()).toMatch(/0\.2\.0.*arm64.*40 KiB.*API key \(ADMIN\)/s);
    expect(await unnamedControls(page)).toEqual([]);
    await page.getByLabel('Version').selectOption('0.2.0');
    await page.getByLabel('Canary').selectOption('lobby');
    await page.getByLabel('Share of the others next (%)').fill('50');
    await page.getByRole('button', { name: 'Start rollout' }).click();
    await page.waitForURL(/\/console\/rollouts$/);
    expect(await flash(page)).toContain('of version 0.2.0 started: lobby first');
    expect(await page.locator('#rollout-stage').textContent()).toContain('version 0.2.0, at its canary stage');
    expect(await page.locator('#rollout-agent-lobby').textContent()).toMatch(/canary.*waiting/s);
    expect(await page.locator('#rollout-agent-garage').textContent()).toMatch(/share.*waiting/s);

    // lobby's next exchange offers it the update.
    expect((await http('GET', '/fleet/self?config=3', { key: granted.lobby })).update).toMatchObject({ manifest });
    await page.reload();
    expect(await page.locator('#rollout-agent-lobby').textContent()).toMatch(/canary.*offered/s);
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/rollouts.png`, fullPage: true });
    await page.goto(`${base}/console/agents`);
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/agents.png`, fullPage: true });
    const lobby = page.locator('#agent-lobby');
    expect(await lobby.textContent()).toMatch(/update 0\.2\.0 offered.*0\.2\.0: canary, offered/s);
    await lobby.getByRole('link', { name: '0.1.0' }).click();
    await page.waitForURL(/\/console\/rollouts$/);

    expect(await unnamedControls(page)).toEqual([]);
    await page.getByLabel('Reason').fill('wrong build');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForURL(/\/console\/rollouts$/);
    expect(await flash(page)).toContain('stopped: nothing more is offered');
    expect(await page.locator('#rollout-1').textContent()).toContain('stopped: stopped by console: API key: wrong build');
    await page.goto(`${base}/console/agents`);
    expect(await page.locator('#agent-lobby').getByRole('link', { name: '0.1.0' }).count()).toBe(0);
  });

  it('a REGULAR session sees nothing of the fleet: no Rollouts, no agent page, no enrolment; the health of the agents as before', async () => {
    const context = await browser.newContext();
    const regular = await signIn(context, keys.REGULAR);
    expect(await regular.getByRole('link', { name: 'Rollouts' }).count()).toBe(0);
    for (const path of ['/console/rollouts', '/console/agents/lobby']) {
      await regular.goto(`${base}${path}`);
      expect(await regular.getByRole('alert').textContent()).toBe('This needs rank ADMIN: you are signed in as REGULAR.');
    }
    await regular.goto(`${base}/console/agents`);
    await expect.poll(() => regular.locator('#agent-shed').textContent()).toContain('offline');
    const main = await regular.locator('main').textContent();
    for (const hidden of ['lobby', 'garage', 'stranger', 'New enrolment code', 'Needs attention']) expect(main).not.toContain(hidden);
    await context.close();
  });

  it("an agent's last sync shows when it last reported in the site's zone, or its health's cache age; a bad health shows in Health", async () => {
    // garage reports (no health message from it): Last sync is when, in Europe/Berlin.
    await page.goto(`${base}/console/agents`);
    expect(await page.locator('#agent-garage td[data-label="Last sync"]').textContent()).toBe('never');
    expect(await page.locator('#agent-garage td[data-label="Health"]').textContent()).toBe('no health message');
    await http('POST', '/fleet/self/report', { key: granted.garage, body: { version: '0.1.0', config: { applied: 1, refused: null, how: 'restart' } } });
    const listed = (await http('GET', '/fleet/agents', { key: keys.ADMIN })).agents as Array<{ agent_id: string | null; reported_at: string }>;
    const reportedAt = listed.find((a) => a.agent_id === 'garage')!.reported_at;
    await page.reload();
    const garageSync = page.locator('#agent-garage td[data-label="Last sync"]');
    expect(await garageSync.textContent()).toBe(`reported ${inBerlin(reportedAt)}`);
    expect(await garageSync.locator('time').getAttribute('datetime')).toBe(reportedAt);
    expect(await garageSync.locator('time').getAttribute('title')).toBe('Europe/Berlin');

    // lobby's health message: its cache's age is its last sync; readers down and an outbox waiting are its health, live.
    await publishAgent('lobby', true, { cache: { revision: 9, age_s: 30 }, readers: { online: 1, total: 3, per_door: {} }, outbox_depth: 5 });
    const lobbyHealth = page.locator('#agent-lobby td[data-label="Health"]');
    await expect.poll(() => lobbyHealth.textContent(), { timeout: 15_000 }).toBe('1 of 3 readers online, outbox 5');
    expect(await lobbyHealth.locator('.warn').textContent()).toBe('outbox 5');
    const lobbySync = page.locator('#agent-lobby td[data-label="Last sync"]');
    expect(await lobbySync.textContent()).toBe('30 s ago');
    expect(await lobbySync.locator('span').getAttribute('title')).toBe('revision 9');
  });

  it('Needs attention lists an agent whose last update rolled back and one whose reader firmware task failed, saying so', async () => {
    // lobby was offered 0.2.0 by rollout 1 (stopped since); its report: the update rolled back.
    await http('POST', '/fleet/self/report', {
      key: granted.lobby,
      body: { version: '0.1.0', update: { rollout_id: 1, state: 'rolled_back', detail: 'health check failed: the doors did not come up' } },
    });
    // garage is asked to send a reader's firmware; its report: the task failed.
    const file = await http('POST', '/fleet/files?name=reader-2.1.bin', { key: keys.ADMIN, raw: randomBytes(2000) });
    const task = await http('POST', '/fleet/agents/garage/reader-firmware', {
      key: keys.ADMIN,
      body: { readers: ['Front door entry'], file_id: file.file_id },
    });
    await page.goto(`${base}/console/agents`);
    expect(await page.locator('#agent-garage td[data-label="Pending changes"]').textContent()).toBe('reader firmware: 1 task waiting');
    await http('POST', '/fleet/self/report', {
      key: granted.garage,
      body: { version: '0.1.0', tasks: [{ task_id: task.task_id, state: 'failed', detail: 'the reader did not answer' }] },
    });

    await page.goto(`${base}/console/agents?attention=1`);
    expect(await page.locator('h1').textContent()).toBe('Agents: 3 need attention');
    expect(await page.locator('#agent-lobby td[data-label="Needs attention"] li').allTextContents()).toEqual([
      'refused configuration v4',
      'update rolled back (rollout 1)',
    ]);
    expect(await page.locator('#agent-garage td[data-label="Needs attention"] li').allTextContents()).toEqual([
      `reader firmware failed (task ${task.task_id})`,
    ]);
    expect(await page.locator('#agent-garage td[data-label="Pending changes"]').textContent()).toBe('');
  });
});
