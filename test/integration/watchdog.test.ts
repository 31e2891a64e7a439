import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { systemdNotifier } from '../../src/system/sdNotify.js';
import { SystemdWatchdog, watchdogUsecFrom } from '../../src/system/watchdog.js';
import { runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { NotifySocket } from '../support/notifySocket.js';

// systemd's side of Type=notify and WatchdogSec=, played by a Unix datagram socket the test owns.
const tmp = tempDir('door-agent-watchdog-');
afterAll(tmp.cleanup);
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let n = 0;
async function notifySocket(): Promise<NotifySocket> {
  const socket = new NotifySocket(join(tmp.path, `notify-${n++}.sock`));
  cleanups.push(() => socket.close());
  await socket.ready();
  return socket;
}

describe('systemd notification', () => {
  it('the daemon sends READY=1 once ready, WATCHDOG=1 at half of WATCHDOG_USEC, and STOPPING=1 at stop', async () => {
    const socket = await notifySocket();
    const dir = join(tmp.path, 'daemon');
    mkdirSync(dir);
    const config = writeConfig(dir);
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const daemon = new Daemon(config, { env: { NOTIFY_SOCKET: socket.path, WATCHDOG_USEC: '400000' } });
    cleanups.push(() => daemon.stop('SIGKILL'));
    await daemon.waitForMessage('door-agent ready');
    await waitUntil(() => socket.states().filter((s) => s === 'WATCHDOG=1').length >= 3, 10_000, 'three watchdog pings');
    expect(socket.states()[0]).toBe('READY=1');
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(socket.states().at(-1)).toBe('STOPPING=1');
    expect(readLevel(join(dir, 'gpio/gpio17/value'))).toBe('0');
  });

  it('outside systemd (no NOTIFY_SOCKET) nothing is sent and the agent runs as before', () => {
    expect(systemdNotifier(undefined)).toBeNull();
    expect(watchdogUsecFrom({}, 42)).toBeNull();
    expect(watchdogUsecFrom({ WATCHDOG_USEC: '10000000', WATCHDOG_PID: '41' }, 42)).toBeNull(); // meant for another process
    expect(watchdogUsecFrom({ WATCHDOG_USEC: '10000000', WATCHDOG_PID: '42' }, 42)).toBe(10_000_000);
  });

  it('a blocked event loop stops the pings (they come from the loop, not from a thread), and they resume after', async () => {
    const socket = await notifySocket();
    const watchdog = new SystemdWatchdog({ notify: systemdNotifier(socket.path)!, watchdogUsec: 200_000, logger: pino({ level: 'silent' }) });
    cleanups.push(() => watchdog.stopping());
    watchdog.ready();
    await waitUntil(() => socket.states().filter((s) => s === 'WATCHDOG=1').length >= 3, 10_000, 'pings before the block');
    // The loop is stuck for 1.5 s, as a runaway synchronous job would leave it.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
    await waitUntil(() => socket.states().filter((s) => s === 'WATCHDOG=1').length >= 6, 10_000, 'pings after the block');
    const pings = socket.received.filter((r) => r.state === 'WATCHDOG=1').map((r) => r.at);
    const longestGap = Math.max(...pings.slice(1).map((at, i) => at - pings[i]!));
    expect(longestGap).toBeGreaterThanOrEqual(1400); // no ping while the loop was blocked
  });
});
