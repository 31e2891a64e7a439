import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { Daemon } from '../support/daemon.js';
import { PtyPair } from '../support/socat.js';

// config check reports every problem at once and agrees with what `run` does with the same file: what it calls an
// error, run refuses; what run refuses at start, it calls an error. Machine checks (data directory, reader devices)
// are made as the current user: as root, the tests run the CLI as nobody, so that permissions mean something.

const tmp = tempDir('door-agent-configall-');
chmodSync(tmp.path, 0o755);
afterAll(tmp.cleanup);
let n = 0;

/** zod's own words, which the project's voice (config/problemVoice.ts) replaces. */
const ZOD_WORDING = /Invalid input|received|Too (small|big)|expected (number|string)/;

const ROOT_USER = process.getuid?.() === 0;
const OTHER = ROOT_USER ? { uid: 65534, gid: 65534 } : {};
const OTHER_UID = ROOT_USER ? 65534 : process.getuid!();

/** The built CLI as the user the checks are about (nobody when the tests run as root). */
function asUser(args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { ...OTHER, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A directory the checked user owns, with a config whose doors, data dir and extra sections are given. */
function config(options: { doors?: string; agent?: string; extra?: string; dataDir?: string } = {}): { dir: string; path: string } {
  const dir = join(tmp.path, `c${n++}`);
  mkdirSync(join(dir, 'gpio'), { recursive: true });
  if (ROOT_USER) for (const d of [dir, join(dir, 'gpio')]) chownSync(d, 65534, 65534);
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `agent: { id: ${options.agent ?? 'cc'}, dataDir: ${options.dataDir ?? join(dir, 'data')}, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${join(dir, 'gpio')} }
${options.extra ?? ''}
doors:
${options.doors ?? `  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 } }`}
`,
  );
  chmodSync(path, 0o644);
  return { dir, path };
}

describe('config check reports every problem at once', () => {
  it('schema errors and the checks across keys together, each with its key path (exit 78)', () => {
    const { path } = config({
      agent: '"bad id!"',
      doors: `  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, unlockSeconds: 20, maxUnlockSeconds: 10 }
  - { uuid: ${DOOR_UUID}, resourceId: 13, relay: { pin: 17 } }
  - { uuid: ${SECOND_DOOR_UUID}, resourceId: 14, relay: { pin: "x" } }
  - { uuid: 11111111-2222-4333-8444-555555555555, resourceId: 15, relay: { pin: 22 }, reader: { type: wiegand, d0: 22, d1: 23 } }`,
    });
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(78);
    for (const line of [
      'agent.id: must be 1-64 letters, digits, "-" or "_"',
      'doors[2].relay.pin: "x" is not a whole number (a BCM GPIO number, 0-63)',
      'doors[0].unlockSeconds: is longer than maxUnlockSeconds (10)',
      'doors[1].uuid: same uuid as doors[0]',
      'doors[1].relay.pin: GPIO 17 is already used by doors[0].relay.pin',
      // The door after the invalid one keeps its own index in the file.
      'doors[3].reader.d0: GPIO 22 is already used by doors[3].relay.pin',
    ]) {
      expect(r.stderr).toContain(`  ${line}\n`);
    }
  });
});

/** `config check` and the command that starts (`run` or `service`) both refuse the file (78), naming `problems` in the project's voice. */
function expectBothRefuse(path: string, starts: 'run' | 'service', problems: string): void {
  for (const args of [
    ['config', 'check', '--config', path],
    [starts, '--config', path],
  ]) {
    const r = runCli(args);
    expect(r.status, r.stderr).toBe(78);
    expect(r.stderr).toContain(problems);
    expect(r.stderr).not.toMatch(ZOD_WORDING);
  }
}

describe('every problem at once, in the project voice (issue 53 item 6)', () => {
  it('a resourceId in words no longer hides the same door pin clash: config check and run both name both, sorted by key', () => {
    const { path } = config({ doors: `  - { uuid: ${DOOR_UUID}, resourceId: twelve, relay: { pin: 17 }, contact: { pin: 17 } }` });
    const problems =
      `${path} is invalid:\n` +
      '  doors[0].contact.pin: GPIO 17 is already used by doors[0].relay.pin\n' +
      `  doors[0].resourceId: "twelve" is not a whole number (the service's resource id of this door, e.g. 12)\n`;
    expectBothRefuse(path, 'run', problems);
  });

  // zod's .int() stops every later check on a fraction, even the checks across keys (api/wholeNumber.ts).
  it.each([
    [
      'a fractional resourceId',
      'resourceId: 12.5, relay: { pin: 16 }',
      `doors[0].resourceId: 12.5 is not a whole number (the service's resource id of this door, e.g. 12)`,
    ],
    [
      'a fractional unlockSeconds',
      'resourceId: 12, relay: { pin: 16 }, unlockSeconds: 2.5',
      'doors[0].unlockSeconds: 2.5 is not a whole number (how long a granted card unlocks the door)',
    ],
    ['a fractional relay pin', 'resourceId: 12, relay: { pin: 17.5 }', 'doors[0].relay.pin: 17.5 is not a whole number (a BCM GPIO number, 0-63)'],
    [
      'a fractional hour in an unlock schedule',
      'resourceId: 12, relay: { pin: 16 }, unlockSchedule: [[], [[8.5, 18]], [], [], [], [], []]',
      'doors[0].unlockSchedule[1][0][0]: 8.5 is not a whole number',
    ],
  ])('%s hides neither its own door pin clash nor another door: config check and run name all three', (_what, keys, own) => {
    const door0 = `  - { uuid: ${DOOR_UUID}, ${keys}, contact: { pin: 18 }, exitButton: { pin: 18 } }`;
    const door1 = `  - { uuid: ${SECOND_DOOR_UUID}, resourceId: 13, relay: { pin: 22 }, contact: { pin: 22 } }`;
    const { path } = config({ doors: `${door0}\n${door1}` });
    const problems =
      `${path} is invalid:\n` +
      '  doors[0].exitButton.pin: GPIO 18 is already used by doors[0].contact.pin\n' +
      `  ${own}\n` +
      '  doors[1].contact.pin: GPIO 22 is already used by doors[1].relay.pin\n';
    expectBothRefuse(path, 'run', problems);
  });

  it("the service's file: a resourceId in words or a fraction hides no clash between resources (config check and service)", () => {
    const dir = join(tmp.path, `svc${n++}`);
    mkdirSync(dir);
    const path = join(dir, 'service.yaml');
    const resource = (id: string, uuid: string, name: string) => `    - { resourceId: ${id}, uuid: ${uuid}, type: DOOR, name: ${name} }`;
    writeFileSync(
      path,
      `server:\n  dataDir: ${join(dir, 'data')}\n  resources:\n${[
        resource('12', DOOR_UUID, 'Front'),
        resource('twelve', DOOR_UUID, 'Back'),
        resource('13.5', SECOND_DOOR_UUID, 'Side'),
        resource('12', SECOND_DOOR_UUID, 'Yard'),
      ].join('\n')}\n`,
    );
    const problems =
      `${path} is invalid:\n` +
      '  server.resources[1].resourceId: "twelve" is not a whole number\n' +
      '  server.resources[1].uuid: same uuid as resources[0]\n' +
      '  server.resources[2].resourceId: 13.5 is not a whole number\n' +
      '  server.resources[3].resourceId: same resourceId as resources[0]\n' +
      '  server.resources[3].uuid: same uuid as resources[2]\n';
    expectBothRefuse(path, 'service', problems);
  });
});

describe('config check: the data directory, checked as the current user', () => {
  it('absent but creatable: ok, and says who can create it; an existing writable one: ok', () => {
    const a = config();
    let r = asUser(['config', 'check', '--config', a.path]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`data directory ${join(a.dir, 'data')}: does not exist yet;`);
    expect(r.stdout).toContain(`(uid ${OTHER_UID}) can create it`);
    mkdirSync(join(a.dir, 'data'));
    if (ROOT_USER) chownSync(join(a.dir, 'data'), 65534, 65534);
    r = asUser(['config', 'check', '--config', a.path]);
    expect(r.stdout).toContain(`data directory ${join(a.dir, 'data')}: writable by `);
  });

  it('not writable, not creatable, or not a directory: an error (exit 78) naming the path and the user', () => {
    const ro = join(tmp.path, `ro${n++}`);
    mkdirSync(join(ro, 'existing'), { recursive: true });
    chmodSync(ro, 0o555);
    chmodSync(join(ro, 'existing'), 0o555);
    const file = join(tmp.path, `file${n++}`);
    writeFileSync(file, '');
    for (const [dataDir, message] of [
      [join(ro, 'existing'), `agent.dataDir: ${join(ro, 'existing')} is not writable by `],
      [join(ro, 'new', 'data'), `agent.dataDir: ${join(ro, 'new', 'data')} does not exist and `],
      [file, `agent.dataDir: ${file} is a regular file, not a directory`],
    ] as const) {
      const r = asUser(['config', 'check', '--config', config({ dataDir }).path]);
      expect(r.status, dataDir).toBe(78);
      expect(r.stderr).toContain(message);
      if (!dataDir.startsWith(file)) expect(r.stderr).toContain(`(uid ${OTHER_UID})`);
    }
  });
});

describe('config check: reader device paths are warnings (exit 0)', () => {
  it('absent (not plugged in yet), not a device, not readable and writable by the user: one warning each; a usable device: none', async () => {
    const dir = join(tmp.path, `dev${n++}`);
    mkdirSync(dir);
    const plain = join(dir, 'plain-file');
    writeFileSync(plain, '');
    const pty = new PtyPair(join(dir, 'ttyLocked'), join(dir, 'ttyLockedTerm'));
    await pty.plugIn();
    try {
      chmodSync(join(dir, 'ttyLocked'), 0o000);
      const door = (i: number, uuid: string, path: string) =>
        `  - { uuid: ${uuid}, resourceId: ${20 + i}, relay: { pin: ${17 + i} }, reader: { type: serial, path: ${path} } }`;
      const { path } = config({
        doors: [
          door(0, DOOR_UUID, join(dir, 'ttyUSB9')),
          door(1, SECOND_DOOR_UUID, plain),
          door(2, '11111111-2222-4333-8444-555555555555', join(dir, 'ttyLocked')),
          door(3, '11111111-2222-4333-8444-555555555556', '/dev/null'),
        ].join('\n'),
      });
      const r = asUser(['config', 'check', '--config', path]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(`: ok\n`);
      expect(r.stdout).toContain(
        `WARNING: doors[0].reader.path: ${join(dir, 'ttyUSB9')} does not exist (the reader is not plugged in yet?); door-agent starts without it`,
      );
      expect(r.stdout).toContain(`WARNING: doors[1].reader.path: ${plain} is a regular file, not a character device`);
      expect(r.stdout).toMatch(
        new RegExp(
          `WARNING: doors\\[2\\]\\.reader\\.path: ${join(dir, 'ttyLocked')} is not readable and writable by \\S+ \\(uid ${OTHER_UID}\\) \\(owner uid \\d+, group \\S+, mode 0\\): add the user to group`,
        ),
      );
      expect(r.stdout).not.toContain('doors[3].reader.path');
    } finally {
      await pty.unplug();
    }
  });
});

describe('config check agrees with run', () => {
  const secretMissing = (dir: string) => `service: { baseUrl: "http://127.0.0.1:9999", apiKeyFile: ${dir}/no-such-key }`;
  it.each([
    ['a schema error', { agent: '"bad id!"' }, ['agent.id']],
    [
      'two doors on one pin (across keys)',
      { doors: `  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 } }\n  - { uuid: ${SECOND_DOOR_UUID}, resourceId: 13, relay: { pin: 17 } }` },
      ['doors[1].relay.pin'],
    ],
    ['a secret file that is missing', { extra: 'SECRET' }, ['service.apiKeyFile']],
  ] as const)('%s: both exit 78, and config check names what run names', (_name, options, paths) => {
    const c = config(options as Parameters<typeof config>[0]);
    if ('extra' in options) writeFileSync(c.path, readFileSync(c.path, 'utf8').replace('SECRET', secretMissing(c.dir)));
    const run = asUser(['run', '--config', c.path]);
    const check = asUser(['config', 'check', '--config', c.path]);
    expect(run.status, run.stderr).toBe(78);
    expect(check.status, check.stderr).toBe(78);
    for (const p of paths) {
      expect(run.stderr).toContain(p);
      expect(check.stderr).toContain(p);
    }
  });

  it('a data directory the user cannot create: config check exits 78, run does not start either', () => {
    const ro = join(tmp.path, `ro${n++}`);
    mkdirSync(ro);
    chmodSync(ro, 0o555);
    const c = config({ dataDir: join(ro, 'data') });
    const check = asUser(['config', 'check', '--config', c.path]);
    expect(check.status).toBe(78);
    const run = asUser(['run', '--config', c.path]);
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain(ro);
  });

  it('only warnings (a reader not plugged in): config check exits 0 and run starts the door', async () => {
    const c = config({ doors: `  - { uuid: ${DOOR_UUID}, resourceId: 12, relay: { pin: 17 }, reader: { type: serial, path: /dev/ttyUSB-not-plugged-in } }` });
    expect(asUser(['config', 'check', '--config', c.path]).status).toBe(0);
    const daemon = new Daemon(c.path);
    try {
      await daemon.waitForMessage('door-agent ready', 30_000);
    } finally {
      await daemon.stop();
    }
  });
});
