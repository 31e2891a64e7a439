import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel } from '../support/daemon.js';
import { freePort } from '../support/net.js';

// The daemon's helper threads under SCHED_BATCH, its event loop's thread not (src/system/threadPolicy.ts): what
// `ps -L -o tid,cls,comm -p PID` shows an installer (TS for the one, B for the others), read from /proc as ps does.

const SCHED_OTHER = 0;
const SCHED_BATCH = 3;

/** Each thread of `pid` with its scheduling policy (/proc/PID/task/TID/stat, field 41). */
function policies(pid: number): Map<number, number> {
  const result = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`).map(Number)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // After the command's name in parentheses (which may hold spaces) come fields 3 onwards.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      result.set(tid, Number(fields[41 - 3]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return result;
}

const tmp = tempDir('door-agent-thread-policy-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

const H = 'd00d'.padEnd(32, '0');
const TAG = '5'.padStart(16, '0');
const directory = {
  revision: 5,
  full: true,
  history: H,
  tag: TAG,
  users: [{ email_id: 1, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: 'a@example.org' }],
  details: { '1': { policies: [], smartcards: [{ number: '7000001', label: 'badge' }] } },
  removed: [],
};

/** A service that answers GET /directory with the directory above. */
async function service(): Promise<string> {
  const port = await freePort();
  const server: Server = createServer((req, res) => {
    if (!req.url?.startsWith('/directory')) return void res.writeHead(404).end('{"error":"no"}');
    res.writeHead(200, { 'content-type': 'application/json', etag: `"dir-5-${H}-${TAG}"` });
    res.end(JSON.stringify(directory));
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return `http://127.0.0.1:${port}`;
}

describe("the daemon's helper threads", () => {
  it('run under SCHED_BATCH once the daemon is ready (the sync worker after a sync too); the event loop stays SCHED_OTHER', async () => {
    const url = await service();
    const dir = join(tmp.path, 'daemon');
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), 'dak_test-key\n');
    const config = writeConfig(dir, {
      access: '{ groups: [Staff] }',
      extra: `service: { baseUrl: "${url}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 5, startDelaySeconds: 0, maxRemovalRatio: 1 }\n`,
    });
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const daemon = new Daemon(config);
    cleanups.push(() => daemon.stop('SIGKILL'));
    await daemon.waitForMessage('door-agent ready', 30_000);
    await daemon.waitForMessage('sync done', 30_000);
    // Said once, after the start; a warning would name the threads it could not move.
    await daemon.waitForMessage("helper threads under SCHED_BATCH: they never preempt the doors' thread", 30_000);
    expect(daemon.logs.filter((l) => String(l.msg).startsWith('helper threads')).map((l) => l.level)).toEqual([30]);

    const threads = policies(daemon.pid);
    // V8's threads, libuv's pool, the checkpoint and sync workers: several, whatever this Node's counts.
    expect(threads.size).toBeGreaterThan(6);
    expect(threads.get(daemon.pid), 'the event loop thread').toBe(SCHED_OTHER);
    const helpers = [...threads].filter(([tid]) => tid !== daemon.pid);
    expect(
      helpers.filter(([, policy]) => policy !== SCHED_BATCH),
      'helpers not under SCHED_BATCH',
    ).toEqual([]);
  }, 60_000);

  it('each worker, as bundled, moves its own thread when it starts (a sync worker restarted after it died is not walked)', () => {
    const dir = join(tmp.path, 'workers');
    mkdirSync(dir);
    const config = writeConfig(dir);
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const cacheFile = join(dir, 'data/cache.db');
    const workers = {
      sync: {
        file: join(ROOT, 'dist/cli/syncWorker.js'),
        data: { cacheFile, client: { baseUrl: 'http://127.0.0.1:9', apiKey: 'k', apiKeyIn: 'header', timeoutMs: 5000 } },
      },
      checkpoint: { file: join(ROOT, 'dist/cli/checkpointWorker.js'), data: { file: join(dir, 'data/state.db') } },
    };
    // In a process of its own that walks nothing: each worker's new threads, and their policies once it is up.
    const script = `
      const { Worker } = require('node:worker_threads');
      const { readdirSync, readFileSync } = require('node:fs');
      const policy = (tid) => {
        const stat = readFileSync('/proc/self/task/' + tid + '/stat', 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
      };
      const tids = () => readdirSync('/proc/self/task').map(Number);
      const result = {};
      (async () => {
        // libuv's pool first (made at its first request): its threads are not the workers'.
        await require('node:fs/promises').access(process.execPath);
        for (const [name, { file, data }] of Object.entries(${JSON.stringify(workers)})) {
          const before = new Set(tids());
          const worker = new Worker(file, { workerData: data });
          worker.on('error', (err) => { console.error(name, err); process.exit(2); });
          await new Promise((resolve) => worker.once('online', resolve));
          // Until its module's top has run (it moves its thread there): seconds on a loaded machine.
          const started = Date.now();
          const fresh = () => tids().filter((tid) => !before.has(tid)).map(policy);
          while (fresh().some((p) => p !== ${SCHED_BATCH}) && Date.now() - started < 20000) await new Promise((resolve) => setTimeout(resolve, 100));
          result[name] = fresh();
        }
        result.main = policy(process.pid);
        console.log(JSON.stringify(result));
        process.exit(0);
      })();
    `;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({ sync: [SCHED_BATCH], checkpoint: [SCHED_BATCH], main: SCHED_OTHER });
  }, 90_000);

  it('without the addon (not built): a warning that says how to build it, and the daemon runs as before', async () => {
    // The installed bundle as it is, in a package without build/ (the addons node-gyp makes at npm ci).
    const pkg = join(tmp.path, 'no-addon');
    mkdirSync(join(pkg, 'dist'), { recursive: true });
    cpSync(join(ROOT, 'dist/cli'), join(pkg, 'dist/cli'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
    const dir = join(tmp.path, 'no-addon-door');
    mkdirSync(dir);
    const config = writeConfig(dir);
    const daemon = new Daemon(config, { command: [process.execPath], entry: join(pkg, 'dist/cli/door-agent.js') });
    cleanups.push(() => daemon.stop('SIGKILL'));
    await daemon.waitForMessage('door-agent ready', 30_000);
    const warning = await daemon.waitForMessage("helper threads left under SCHED_OTHER: a tap may wait behind V8's compiler on a busy CPU", 30_000);
    expect(warning.level).toBe(40);
    expect(JSON.stringify(warning.err)).toContain(`the sched_policy addon cannot be loaded from ${join(pkg, 'build/Release/sched_policy.node')}`);
    expect(JSON.stringify(warning.err)).toContain('run npm ci in the door-agent directory to build it');
    expect([...policies(daemon.pid).values()].every((policy) => policy === SCHED_OTHER)).toBe(true);
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(readLevel(join(dir, 'gpio/gpio17/value'))).toBe('0');
  }, 60_000);

  it('the addon refuses what is not a thread id (NaN would be the calling thread) and leaves the thread as it was', () => {
    const addon = join(ROOT, 'build/Release/sched_policy.node');
    const script = `
      const { batch } = require(${JSON.stringify(addon)});
      const codes = [Number.NaN, Number.POSITIVE_INFINITY, 1.5, -1, 2 ** 31, 'x'].map((tid) => {
        try { batch(tid); return 'accepted'; } catch (err) { return err.code; }
      });
      const stat = require('node:fs').readFileSync('/proc/self/task/' + process.pid + '/stat', 'utf8');
      console.log(JSON.stringify({ codes, policy: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]) }));
    `;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({ codes: ['EINVAL', 'EINVAL', 'EINVAL', 'EINVAL', 'EINVAL', 'EINVAL'], policy: SCHED_OTHER });
  });

  it('a worker thread puts itself under SCHED_BATCH, and only itself', () => {
    const module = join(ROOT, 'dist/src/system/threadPolicy.js');
    // In a process of its own (the test's threads keep their policy), which reads its threads' policies as above.
    const script = `
      const { Worker } = require('node:worker_threads');
      const { readFileSync } = require('node:fs');
      const policy = (tid) => {
        const stat = readFileSync('/proc/self/task/' + tid + '/stat', 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
      };
      const worker = new Worker(\`
        const { parentPort } = require('node:worker_threads');
        const { readlinkSync } = require('node:fs');
        import(${JSON.stringify(module)}).then(({ batchThisThread }) => {
          const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
          batchThisThread();
          parentPort.postMessage(tid);
          setTimeout(() => {}, 10_000); // alive while its policy is read
        });
      \`, { eval: true });
      worker.once('message', (tid) => {
        console.log(JSON.stringify({ worker: policy(tid), main: policy(process.pid) }));
        process.exit(0);
      });
    `;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({ worker: SCHED_BATCH, main: SCHED_OTHER });
  });
});
