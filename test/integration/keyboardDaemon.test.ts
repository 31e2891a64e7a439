import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EV_KEY, encodeInputEvent } from '../../src/readers/keyboard/inputEvents.js';
import { runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';

// The real daemon with a keyboard reader. This machine has no input device to spare, so a FIFO stands in for
// /dev/input/...-event-kbd: the kernel's input_event records written into it take the real path (open, grab,
// which a FIFO refuses, poll, read, decode, the serial line framing). Alice's card: 4213578.

const tmp = tempDir('door-agent-kbd-');
afterAll(tmp.cleanup);
const running: Daemon[] = [];
afterEach(async () => {
  for (const daemon of running.splice(0)) await daemon.stop('SIGKILL');
});

const CODES: Record<string, number> = { '1': 2, '2': 3, '3': 4, '4': 5, '5': 6, '6': 7, '7': 8, '8': 9, '9': 10, '0': 11, '#': 4, '\n': 28 };
function typeInto(fd: number, text: string): void {
  const records = [...text].flatMap((c) => {
    const shifted = c === '#';
    const code = CODES[c]!;
    return [
      ...(shifted ? [encodeInputEvent(EV_KEY, 42, 1)] : []),
      encodeInputEvent(EV_KEY, code, 1),
      encodeInputEvent(EV_KEY, code, 0),
      ...(shifted ? [encodeInputEvent(EV_KEY, 42, 0)] : []),
    ];
  });
  writeSync(fd, Buffer.concat(records));
}

describe('a keyboard reader (type: keyboard)', () => {
  it('a typed card opens the door and a typed PIN too; it says it could not take the device exclusively', async () => {
    const dir = join(tmp.path, 'k0');
    mkdirSync(dir);
    const device = join(dir, 'event-kbd');
    expect(spawnSync('mkfifo', [device]).status).toBe(0);
    const config = writeConfig(dir, {
      id: 'kbd',
      access: '{ groups: [Staff] }',
      doorExtra: `    unlockSeconds: 1\n    reader: { type: keyboard, path: ${device} }\n`,
    });
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const daemon = new Daemon(config);
    running.push(daemon);
    await daemon.waitForMessage('reader connected');
    const warned = await daemon.waitForMessage('reader error');
    expect(JSON.stringify(warned)).toContain('exclusively');
    const writer = openSync(device, constants.O_WRONLY | constants.O_NONBLOCK);
    try {
      const relay = join(dir, 'gpio/gpio17/value');
      typeInto(writer, '4213578\n');
      await waitUntil(() => readLevel(relay) === '1', 5000, 'the card opens');
      await waitUntil(() => readLevel(relay) === '0', 5000, 'relocked');
      typeInto(writer, '1234#');
      await waitUntil(() => readLevel(relay) === '1', 5000, 'the PIN opens');
      const status = runCli(['status', '--config', config]).stdout;
      expect(status).toContain(`reader keyboard ${device} connected`);
    } finally {
      await daemon.stop('SIGKILL');
      closeSync(writer);
    }
  });

  it('a path that is not an input device is refused with a clear reason, retried, and the door still works', async () => {
    const dir = join(tmp.path, 'k1');
    mkdirSync(dir);
    const config = writeConfig(dir, {
      id: 'kbd',
      access: '{ groups: [Staff] }',
      doorExtra: `    reader: { type: keyboard, path: ${join(dir, 'config.yaml')} }\n`,
    });
    const daemon = new Daemon(config);
    running.push(daemon);
    const line = await daemon.waitForMessage('cannot open reader; retrying with backoff');
    expect(line.reason).toContain('is not an input device');
  });
});
