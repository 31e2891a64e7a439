import { spawnSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../support/cli.js';

// The evdev addon's one call, EVIOCGRAB, on what this machine has (no input device): the errors an operator
// would see, with their errno codes.
const tmp = tempDir('door-agent-evdev-');
afterAll(tmp.cleanup);
const addon = createRequire(import.meta.url)(join(ROOT, 'build/Release/evdev.node')) as { grab(fd: number, exclusive: boolean): void };

describe('the evdev addon', () => {
  it('refuses what is not an input device (ENOTTY), a closed fd (EBADF), and bad arguments (TypeError)', () => {
    const fifo = join(tmp.path, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    expect(() => addon.grab(fd, true)).toThrow(expect.objectContaining({ code: 'ENOTTY', message: expect.stringContaining(`EVIOCGRAB on fd ${fd}`) }));
    closeSync(fd);
    expect(() => addon.grab(fd, true)).toThrow(expect.objectContaining({ code: 'EBADF' }));
    expect(() => addon.grab(-1, true)).toThrow(TypeError);
    expect(() => (addon.grab as unknown as (fd: string) => void)('3')).toThrow(TypeError);
  });
});
