import { createHash, generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { UpdateOffer } from '../../src/api/fleet.js';
import { FleetClient, type FleetExchange } from '../../src/fleet/fleetClient.js';
import { FleetComponent } from '../../src/fleet/fleetComponent.js';
import { FleetReporter, type ReportPart } from '../../src/fleet/fleetReporter.js';
import { FirmwareTasks } from '../../src/fleet/firmwareTasks.js';
import { readUpdateRequest, updateRequestPath } from '../../src/fleet/update/updateRequest.js';
import { appendUpdateStep } from '../../src/fleet/update/updateResult.js';
import { UpdateOffers } from '../../src/fleet/updateOffers.js';
import { signFleet } from '../../src/protocol/fleetSigning.js';
import { systemTimers } from '../../src/util/clock.js';
import { waitUntil } from '../support/wait.js';
import { tempDir } from '../support/cli.js';

// The board's handlers of an offered update and of reader firmware tasks (docs/fleet.md), with plain objects: the
// service's files served from memory, the reporter a list, the readers a function. End to end: install.test.ts
// (an update through the installed program) and fleetFirmware.test.ts (an OSDP reader on the emulator).

const tmp = tempDir('door-agent-board-updates-');
afterAll(() => tmp.cleanup());
let n = 0;
const logger = pino({ level: 'silent' });
const release = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function reporter() {
  const parts: ReportPart[] = [];
  return { parts, set: (part: ReportPart) => void parts.push(structuredClone(part)), flush: async () => {} };
}
const serve =
  (files: Record<string, Buffer>, fetched: string[] = []) =>
  async (path: string) => {
    fetched.push(path);
    const body = files[path];
    if (!body) throw new Error(`GET ${path}: HTTP 404`);
    return Readable.from([body.subarray(0, 10), body.subarray(10)]);
  };
const exchange = (update: UpdateOffer | null, tasks: FleetExchange['tasks'] = []): FleetExchange => ({ agent_id: 'a', config: null, update, tasks });

describe('an offered update, on the board', () => {
  const bundle = Buffer.from('a bundle, as the service serves it');
  const offer = (over: { version?: string; arch?: string; key?: typeof release; body?: Buffer; rollout?: number } = {}): UpdateOffer => {
    const manifest = { version: over.version ?? '2.0.0', arch: over.arch ?? 'arm64', sha256: sha(bundle), size: bundle.length };
    return {
      rollout_id: over.rollout ?? 7,
      manifest,
      signature: signFleet((over.key ?? release).privateKey, 'release', manifest),
      bundle_path: `/fleet/releases/${manifest.version}_${manifest.arch}/bundle`,
      allow_downgrade: false,
      health_bound_seconds: 120,
    };
  };
  function board(files: Record<string, Buffer>) {
    const dataDir = join(tmp.path, `board-${++n}`);
    const report = reporter();
    const fetched: string[] = [];
    const make = () =>
      new UpdateOffers({
        dataDir,
        open: serve(files, fetched),
        reporter: report,
        releaseKey: () => release.publicKey,
        board: () => ({ arch: 'arm64', installedVersion: '1.0.0' }),
        wallNow: () => Date.parse('2026-07-01T12:00:00Z'),
        logger,
      });
    return { dataDir, report, fetched, make };
  }
  const updates = (parts: ReportPart[]) => parts.filter((p) => p.update).map((p) => [p.update!.state, p.update!.detail]);

  it('downloads the bundle as signed, writes the request for the root unit, and reports downloading then installing; taken once', async () => {
    const o = offer();
    const b = board({ [o.bundle_path]: bundle });
    const handler = b.make();
    await handler.handle(exchange(o));
    expect(updates(b.report.parts).map((u) => u[0])).toEqual(['downloading', 'installing']);
    const request = readUpdateRequest(updateRequestPath(b.dataDir));
    expect(request).toMatchObject({ rollout_id: 7, allow_downgrade: false, health_bound_seconds: 120, signed: { manifest: o.manifest } });
    expect(readFileSync(request.bundle)).toEqual(bundle);
    expect(readdirSync(join(b.dataDir, 'fleet/downloads'))).toEqual(['door-agent-2.0.0-arm64.tar.gz']);
    // Offered again while the request waits, and after a restart: not taken again.
    await handler.handle(exchange(o));
    await b.make().handle(exchange(o));
    expect(b.fetched).toHaveLength(1);
  });

  it('reports what update apply recorded once, at start or at the next exchange, by whichever version runs; never takes that rollout again', async () => {
    const o = offer();
    const b = board({ [o.bundle_path]: bundle });
    const at = '2026-07-01T12:01:00Z';
    appendUpdateStep(b.dataDir, { at, rollout_id: 7, version: '2.0.0', state: 'installing', detail: 'from 1.0.0 to 2.0.0' });
    const handler = b.make(); // the new version, started by the switch
    await handler.handle(exchange(o));
    expect(b.report.parts).toEqual([]);
    appendUpdateStep(b.dataDir, { at, rollout_id: 7, version: '2.0.0', state: 'healthy', detail: '2.0.0 healthy 4 s after its start' });
    await handler.handle(exchange(o));
    expect(updates(b.report.parts)).toEqual([['healthy', '2.0.0 healthy 4 s after its start']]);
    await handler.handle(exchange(null)); // the report went through: recorded
    await b.make().handle(exchange(o));
    expect(b.report.parts).toHaveLength(1);
    expect(b.fetched).toEqual([]);
    // An old version started again after a rollback reports it at its start.
    appendUpdateStep(b.dataDir, { at, rollout_id: 8, version: '2.0.1', state: 'rolled_back', detail: 'rolled back to 1.0.0' });
    b.make();
    expect(updates(b.report.parts).at(-1)).toEqual(['rolled_back', 'rolled back to 1.0.0']);
  });

  it('refuses, with nothing downloaded: another key, another architecture, a downgrade (even one the offer allows), no release key; a bundle not as signed is refused too', async () => {
    const cases: Array<[UpdateOffer, RegExp]> = [
      [offer({ key: other }), /does not verify with the release key/],
      [offer({ arch: 'armhf' }), /is built for armhf; this board is arm64/],
      [offer({ version: '0.9.0' }), /version 0\.9\.0 is older than the installed 1\.0\.0/],
      // An older service's offer that allows a downgrade: the board takes none from the service.
      [Object.assign(offer({ version: '0.9.0' }), { allow_downgrade: true }), /version 0\.9\.0 is older than the installed 1\.0\.0/],
    ];
    for (const [o, reason] of cases) {
      const b = board({ [o.bundle_path]: bundle });
      await b.make().handle(exchange(o));
      expect(b.fetched).toEqual([]);
      expect(updates(b.report.parts)).toEqual([['refused', expect.stringMatching(reason)]]);
      expect(existsSync(updateRequestPath(b.dataDir))).toBe(false);
    }
    const keyless = board({});
    await new UpdateOffers({
      dataDir: keyless.dataDir,
      open: serve({}),
      reporter: keyless.report,
      releaseKey: () => null,
      board: () => ({ arch: 'arm64', installedVersion: '1.0.0' }),
      wallNow: () => 0,
      logger,
    }).handle(exchange(offer()));
    expect(updates(keyless.report.parts)).toEqual([['refused', expect.stringMatching(/no release key .*fleet\.releasePublicKeyFile/)]]);

    const o = offer();
    const b = board({ [o.bundle_path]: Buffer.concat([bundle.subarray(0, 5), Buffer.from('X'), bundle.subarray(6)]) });
    await b.make().handle(exchange(o));
    expect(updates(b.report.parts).at(-1)).toEqual(['refused', expect.stringMatching(/SHA-256 is [0-9a-f]{64}, not the [0-9a-f]{64} expected/)]);
    // No partial file under either name (the downloads are cleared once the update is reported).
    expect(existsSync(join(b.dataDir, 'fleet/downloads')) ? readdirSync(join(b.dataDir, 'fleet/downloads')) : []).toEqual([]);
    expect(existsSync(updateRequestPath(b.dataDir))).toBe(false);
  });

  it('an offer that is not one is refused with the exchange: logged naming the field, nothing downloaded, nothing reported', async () => {
    const dataDir = join(tmp.path, `board-${++n}`);
    // A service (over real HTTP) whose offer points the agent's key at another path than a release's bundle.
    const malformed = Object.assign(offer(), { bundle_path: '/fleet/agents/door-02/config' });
    const asked: string[] = [];
    const reports: unknown[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        asked.push(`${req.method} ${req.url!.split('?')[0]}`);
        if (req.method === 'POST') reports.push(JSON.parse(body));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(req.method === 'POST' ? '{}' : JSON.stringify({ agent_id: 'a', config: null, update: malformed, tasks: [] }));
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const lines: string[] = [];
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const client = new FleetClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: () => 'k'.repeat(32),
      apiKeyIn: 'header',
      timeoutMs: 5000,
    });
    const reporter = new FleetReporter({ client, version: '1.0.0', logger: log });
    const update = new UpdateOffers({
      dataDir,
      open: (path) => client.open(path),
      reporter,
      releaseKey: () => release.publicKey,
      board: () => ({ arch: 'arm64', installedVersion: '1.0.0' }),
      wallNow: () => Date.parse('2026-07-01T12:00:00Z'),
      logger: log,
    });
    const fleet = new FleetComponent({
      client,
      reporter,
      handlers: [update],
      agentId: 'a',
      heldVersion: () => null,
      pollSeconds: 1,
      timers: systemTimers,
      logger: log,
      random: () => 0,
    });
    try {
      fleet.start();
      await waitUntil(() => lines.some((l) => l.includes('update.bundle_path')), 10_000, 'the refused exchange logged');
    } finally {
      await fleet.stop();
      await new Promise((done) => server.close(done));
    }
    const warning = JSON.parse(lines.find((l) => l.includes('update.bundle_path'))!) as { level: number; err: { message: string } };
    expect(warning.level).toBe(40);
    expect(warning.err.message).toMatch(/^GET \/fleet\/self: the answer is not the fleet's exchange: update\.bundle_path: /);
    expect(asked.filter((a) => a !== 'GET /fleet/self')).toEqual([]);
    expect(reports).toEqual([]);
    expect(existsSync(updateRequestPath(dataDir))).toBe(false);
    expect(existsSync(join(dataDir, 'fleet'))).toBe(false);
  });

  it('a download the link breaks is tried again at the next exchange', async () => {
    const o = offer();
    const files: Record<string, Buffer> = {};
    const b = board(files);
    const handler = b.make();
    await handler.handle(exchange(o));
    expect(existsSync(updateRequestPath(b.dataDir))).toBe(false);
    files[o.bundle_path] = bundle;
    await handler.handle(exchange(o));
    expect(existsSync(updateRequestPath(b.dataDir))).toBe(true);
    expect(updates(b.report.parts).map((u) => u[0])).toEqual(['downloading', 'downloading', 'installing']);
  });
});

describe('reader firmware tasks, on the board', () => {
  const file = Buffer.from('DAFW 3.5.0 4\nabcd');
  const task = (id: number, readers: string[], body = file) => ({
    task_id: id,
    kind: 'reader_firmware' as const,
    readers,
    file: { name: 'r.fw', sha256: sha(body), size: body.length, path: `/fleet/files/${id}` },
  });
  function board(results: Record<string, { ok: boolean; reason?: string }>, files: Record<string, Buffer>) {
    const dataDir = join(tmp.path, `tasks-${++n}`);
    const report = reporter();
    const sent: string[] = [];
    const make = () =>
      new FirmwareTasks({
        dataDir,
        open: serve(files),
        reporter: report,
        firmware: {
          busy: null,
          transferFirmware: async (reader, bytes) => {
            sent.push(`${reader}:${bytes.length}`);
            const r = results[reader] ?? { ok: true };
            return r.ok ? { ok: true, version: '3.5.0', previous: '3.4.5' } : { ok: false, reason: r.reason!, version: '3.4.5' };
          },
        },
        logger,
      });
    return { report, sent, make };
  }
  const last = (parts: ReportPart[]) => parts.filter((p) => p.tasks).at(-1)!.tasks;

  it('runs each task once, reader by reader: done with the versions, failed with the first reason and the readers after it untouched', async () => {
    const ok = task(1, ['Front door', 'Front door:exit']);
    const bad = task(2, ['Back door', 'Side door', 'Cellar']);
    const b = board({ 'Side door': { ok: false, reason: 'the reader does not recognize the file' } }, { [ok.file.path]: file, [bad.file.path]: file });
    await b.make().handle(exchange(null, [ok, bad]));
    expect(b.sent).toEqual(['Front door:17', 'Front door:exit:17', 'Back door:17', 'Side door:17']);
    expect(b.report.parts.filter((p) => p.tasks).map((p) => p.tasks!.map((t) => t.state))).toContainEqual(['running']);
    expect(last(b.report.parts)).toEqual([
      { task_id: 1, state: 'done', detail: 'Front door runs firmware 3.5.0 (was 3.4.5); Front door:exit runs firmware 3.5.0 (was 3.4.5)' },
      { task_id: 2, state: 'failed', detail: 'Side door: the reader does not recognize the file (it runs firmware 3.4.5); not sent to Cellar' },
    ]);
    // Listed again (its report not yet seen by the service), and after a restart: reported again, never run again.
    await b.make().handle(exchange(null, [ok, bad]));
    expect(b.sent).toHaveLength(4);
    expect(last(b.report.parts)!.map((t) => t.state)).toEqual(['done', 'failed']);
  });

  it('a file that is not the one named fails the task before any reader is touched', async () => {
    const t = task(3, ['Front door']);
    const b = board({}, { [t.file.path]: Buffer.from('DAFW 3.5.0 4\nabcX') });
    await b.make().handle(exchange(null, [t]));
    expect(b.sent).toEqual([]);
    expect(last(b.report.parts)).toEqual([
      { task_id: 3, state: 'failed', detail: expect.stringMatching(/SHA-256 .* not the .* expected.*no reader was touched/) },
    ]);
  });
});
