import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { fleetAgentsAnswerSchema } from '../../src/api/fleet.js';
import { runCli, tempDir } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { startEnrol } from '../support/enrolRun.js';
import { fleetDocument } from '../support/fleetDocument.js';
import { freePort } from '../support/net.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';

// The installer's whole path, each step as a person takes it (docs/fleet.md, docs/install.md): a real
// `door-agent service` with server.fleet; `door-agent service enrol-code` prints the line; `door-agent enrol` on a
// blank board; the operator adopts it through the API; the board runs `door-agent run` on the file enrolment
// wrote; a configuration version with one door saved at the service reaches the board, which restarts onto it
// (as systemd does) and opens the door on command. All through the built CLI. The steps one by one, with their
// refusals: enrolCommand.test.ts (enrol), fleetConfigDaemon.test.ts (the versions a board takes).

const tmp = tempDir('door-agent-enrol-to-door-');
const board = { dir: join(tmp.path, 'board'), config: join(tmp.path, 'board/etc/config.yaml'), data: join(tmp.path, 'board/data') };
const relay = join(board.dir, 'gpio/gpio17/value');
const daemons: Daemon[] = [];
let service: ServiceProcess;
let serviceConfig: string;
let adminKey: string;
let base: string;

async function api(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${adminKey}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const answer = (await res.json()) as Record<string, unknown>;
  expect(res.status, `${method} ${path}: ${JSON.stringify(answer)}`).toBe(200);
  return answer;
}

/** What the service shows of the agent lobby: its last report's configuration part. */
async function lobbyReport() {
  const { agents } = fleetAgentsAnswerSchema.parse(await api('GET', '/fleet/agents'));
  return agents.find((a) => a.agent_id === 'lobby')?.report?.config ?? null;
}

function startDaemon(): Daemon {
  const daemon = new Daemon(board.config);
  daemons.push(daemon);
  return daemon;
}

beforeAll(async () => {
  const keysDir = join(tmp.path, 'keys');
  const keys = runCli(['service', 'fleet-keys', '--out', keysDir]);
  expect(keys.status, keys.stderr).toBe(0);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  serviceConfig = join(tmp.path, 'service.yaml');
  writeFileSync(
    serviceConfig,
    `server:
  listen: 127.0.0.1:${port}
  publicUrl: ${base}
  dataDir: ${join(tmp.path, 'service')}
  fleet: { identityKeyFile: ${join(keysDir, 'identity.key')}, releasePublicKeyFile: ${join(keysDir, 'release.pub')} }
`,
  );
  const key = runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--config', serviceConfig]);
  expect(key.status, key.stderr).toBe(0);
  adminKey = key.stdout.trim();
  service = await startServiceProcess(serviceConfig, { captureStderr: true });
  mkdirSync(board.dir);
}, 60_000);

afterAll(async () => {
  for (const daemon of daemons) await daemon.stop('SIGKILL');
  await service?.stop();
  tmp.cleanup();
});

describe('from a blank board to a door that opens', () => {
  it('enrolled with a printed code, adopted, run on the file enrolment wrote, given a door from the service, unlocked on command', async () => {
    const printed = runCli(['service', 'enrol-code', '--config', serviceConfig]);
    expect(printed.status, printed.stderr).toBe(0);
    const [, , url, code] = printed.stdout.trim().split(' ');
    expect(url).toBe(base);

    // --data-dir: a test machine's board keeps its data beside its configuration, not in /var/lib.
    const enrol = startEnrol([url!, code!], board);
    const enrolment = await enrol.waiting();
    await api('POST', `/fleet/agents/${enrolment}/adopt`, { agent_id: 'lobby' });
    expect(await enrol.exited, enrol.stderr()).toBe(0);
    expect(enrol.stdout()).toContain(`enrolled as agent lobby of ${base}: wrote ${board.config}`);

    // What a test machine needs beyond what enrolment wrote, all of which is kept: a control socket outside /run,
    // GPIO simulated in files, and a poll each second so that the version reaches the board at once.
    const written = parseYaml(readFileSync(board.config, 'utf8')) as Record<string, Record<string, unknown>>;
    writeFileSync(
      board.config,
      stringify({
        ...written,
        agent: { ...written.agent, controlSocket: join(board.dir, 'control.sock') },
        gpio: { driver: 'simulated', simulatedDir: join(board.dir, 'gpio') },
        fleet: { ...written.fleet, pollSeconds: 1 },
      }),
    );

    const first = startDaemon();
    await first.waitForMessage('door-agent ready', 30_000);
    await first.waitForMessage('no doors yet: waiting for its configuration from the service', 10_000);

    // The operator saves the board's first version: one door (unlocked 2 s). Adding a door restarts the agent.
    expect((await api('PUT', '/fleet/agents/lobby/config', { document: fleetDocument(2, '', false), note: 'the front door' })).version).toBe(1);
    await first.waitForMessage('stopping to apply configuration version 1', 30_000);
    expect(await first.exited).toEqual({ code: 0, signal: null });
    // As systemd does: ExecStopPost, then Restart=always.
    expect(runCli(['relock', '--config', board.config]).status).toBe(0);
    const second = startDaemon();
    await second.waitForMessage('door-agent ready', 30_000);
    expect(second.logs.some((l) => l.msg === 'configuration version 1 from the service merged under the board file')).toBe(true);
    expect(readLevel(relay)).toBe('0');
    await waitUntil(async () => (await lobbyReport())?.applied === 1, 30_000, 'lobby reports version 1 applied');
    expect(await lobbyReport()).toMatchObject({ applied: 1, how: 'restart', refused: null });

    // The door opens on command and relocks after the version's 2 s.
    const unlocked = runCli(['unlock', '--door', 'Front door', '--config', board.config]);
    expect(unlocked.status, unlocked.stderr).toBe(0);
    expect(readLevel(relay)).toBe('1');
    await waitUntil(() => readLevel(relay) === '0', 10_000, 'the door relocked');

    expect(await second.stop()).toEqual({ code: 0, signal: null });
    expect(readLevel(relay)).toBe('0');
  }, 180_000);
});
