/**
 * The GPIO character device addon (native/gpio_chardev.c) for real, on a machine without a GPIO chip: loading,
 * the errors an operator sees (no such chip, not a chip, no permission), argument checks, and the event path
 * (readEvents, watch) on a FIFO standing in for a line request fd: the addon reads raw bytes and polls with
 * uv_poll, so a FIFO carrying 48-byte struct gpio_v2_line_event records exercises the same code. The structs the
 * addon hands to the kernel are checked against <linux/gpio.h> through an LD_PRELOAD stand-in for the GPIO ioctls
 * (compiled here with the C compiler node-gyp uses). Real lines, levels and edges need a chip.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, constants, existsSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadChardevBinding, type LineRequest } from '../../src/hardware/chardev/binding.js';
import { ROOT, tempDir } from '../support/cli.js';

const ADDON = join(ROOT, 'build/Release/gpio_chardev.node');
const tmp = tempDir('door-agent-chardev-');
afterAll(tmp.cleanup);

const fds: number[] = [];
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
  for (const fd of fds.splice(0)) closeSync(fd);
});

let fifoCount = 0;
function mkfifo(): string {
  const path = join(tmp.path, `fifo-${fifoCount++}`);
  const made = spawnSync('mkfifo', [path], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`mkfifo ${path} failed: ${made.stderr}`);
  return path;
}

/** A FIFO opened read-write and non-blocking: one fd that is both ends, like a line request fd is readable. */
function fifoFd(): number {
  const fd = openSync(mkfifo(), constants.O_RDWR | constants.O_NONBLOCK);
  fds.push(fd);
  return fd;
}

/** struct gpio_v2_line_event: u64 timestamp_ns, u32 id (1 rising, 2 falling), u32 offset, u32 seqno, u32 line_seqno, u32 padding[6]. */
function lineEvent(timestampNs: bigint, id: 1 | 2, offset: number, seqno: number, lineSeqno: number): Buffer {
  const b = Buffer.alloc(48);
  b.writeBigUInt64LE(timestampNs, 0);
  b.writeUInt32LE(id, 8);
  b.writeUInt32LE(offset, 12);
  b.writeUInt32LE(seqno, 16);
  b.writeUInt32LE(lineSeqno, 20);
  return b;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** Runs a CommonJS snippet in a fresh node process with `addon` loaded; returns its exit status and output. */
function runNode(script: string, options: { uid?: number; gid?: number } = {}) {
  const r = spawnSync(process.execPath, ['-e', `const addon = require(${JSON.stringify(ADDON)});\n${script}`], {
    encoding: 'utf8',
    timeout: 20_000,
    ...options,
  });
  if (r.error) throw r.error;
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

const binding = loadChardevBinding();
const input: LineRequest = { consumer: 'door-agent', offsets: [17], direction: 'input' };
const output: LineRequest = { consumer: 'door-agent', offsets: [17, 27], direction: 'output', values: [0, 1] };

describe('loading', () => {
  it('loads the addon once, with every function of ChardevBinding', () => {
    expect(loadChardevBinding()).toBe(binding);
    for (const name of ['chipInfo', 'lineInfo', 'requestLines', 'getValues', 'setValues', 'readEvents', 'watch', 'close']) {
      expect(typeof (binding as unknown as Record<string, unknown>)[name], name).toBe('function');
    }
  });
});

describe('errors an operator sees', () => {
  it('a chip that does not exist: ENOENT, naming the path', () => {
    expect(() => binding.chipInfo('/nonexistent/gpiochip9')).toThrow(
      expect.objectContaining({ code: 'ENOENT', message: expect.stringContaining('/nonexistent/gpiochip9') }),
    );
    expect(() => binding.lineInfo('/nonexistent/gpiochip9', 17)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    expect(() => binding.requestLines('/nonexistent/gpiochip9', input)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });

  it('a device that is not a GPIO chip: ENOTTY, saying so', () => {
    const notAChip = expect.objectContaining({ code: 'ENOTTY', message: expect.stringMatching(/\/dev\/null is not a GPIO chip/) });
    expect(() => binding.chipInfo('/dev/null')).toThrow(notAChip);
    expect(() => binding.lineInfo('/dev/null', 17)).toThrow(notAChip);
    // Valid requests get as far as the kernel, which refuses them.
    expect(() => binding.requestLines('/dev/null', input)).toThrow(notAChip);
    expect(() => binding.requestLines('/dev/null', output)).toThrow(notAChip);
    expect(() => binding.requestLines('/dev/null', { ...input, offsets: [5, 6], bias: 'pull-up', edges: true, debounceUs: 5000, eventBufferSize: 64 })).toThrow(
      notAChip,
    );
  });

  it('a chip the service user may not open: EACCES, saying it needs access (the gpio group)', () => {
    const chip = join(tmp.path, 'gpiochip-no-access');
    writeFileSync(chip, '');
    chmodSync(chip, 0o000);
    chmodSync(tmp.path, 0o755);
    const script = `try { addon.chipInfo(${JSON.stringify(chip)}); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
    // root opens anything: run as nobody then.
    const r = process.getuid?.() === 0 ? runNode(script, { uid: 65534, gid: 65534 }) : runNode(script);
    expect(r.stderr).toBe('');
    const err = JSON.parse(r.stdout) as { code: string; message: string };
    expect(err.code).toBe('EACCES');
    expect(err.message).toContain(chip);
    expect(err.message).toMatch(/service user needs read-write access.*gpio group/);
  });

  it('ioctls on an fd that is not a line request: ENOTTY', () => {
    const fd = fifoFd();
    const notARequest = expect.objectContaining({ code: 'ENOTTY', message: expect.stringContaining(`fd ${fd} is not a GPIO line request`) });
    expect(() => binding.getValues(fd, 0b1)).toThrow(notARequest);
    expect(() => binding.setValues(fd, 0b11, 0b01)).toThrow(notARequest);
  });

  it('polling a regular file: EPERM (epoll refuses it)', () => {
    const file = join(tmp.path, 'regular');
    writeFileSync(file, '');
    const fd = openSync(file, 'r');
    fds.push(fd);
    expect(() =>
      binding.watch(
        fd,
        () => {},
        () => {},
      ),
    ).toThrow(expect.objectContaining({ code: 'EPERM' }));
  });

  it('close(fd) closes, and a second close is EBADF (in a child process: the fd number may be reused here)', () => {
    const r = runNode(`
      const fs = require('node:fs');
      const fd = fs.openSync('/dev/null', 'r');
      addon.close(fd);
      try { addon.close(fd); } catch (e) { console.log(e.code + ' ' + e.message); }`);
    expect(r.stdout).toMatch(/^EBADF close\(fd\): fd \d+ is not open/);
  });
});

describe('argument checks (TypeError naming the argument, before any system call)', () => {
  const rejects = (f: () => unknown, message: RegExp) =>
    expect(f).toThrow(expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }));

  it('requestLines', () => {
    const req = (r: Record<string, unknown>) => () => binding.requestLines('/dev/null', r as unknown as LineRequest);
    rejects(req({ ...input, bias: 'up' }), /request\.bias must be 'pull-up', 'pull-down', 'disabled' or 'as-is'/);
    rejects(req({ ...input, bias: 1 }), /request\.bias/);
    rejects(req({ ...input, offsets: Array.from({ length: 33 }, (_, i) => i) }), /request\.offsets must hold 1 to 32 line offsets \(got 33\)/);
    rejects(req({ ...input, offsets: [] }), /request\.offsets must hold 1 to 32/);
    rejects(req({ ...input, offsets: [17, 1.5] }), /request\.offsets\[1\] must be an integer/);
    rejects(req({ ...input, offsets: [-1] }), /request\.offsets\[0\] must be an integer/);
    rejects(req({ ...input, offsets: ['17'] }), /request\.offsets\[0\] must be an integer/);
    rejects(req({ ...input, offsets: 17 }), /request\.offsets must be an array/);
    rejects(req({ ...input, offsets: [17, 4, 17] }), /request\.offsets lists line 17 twice/);
    rejects(req({ ...output, values: [1] }), /request\.values has 1 entries but request\.offsets has 2/);
    rejects(req({ ...output, values: undefined }), /request\.values must be an array of 0\/1/);
    rejects(req({ ...output, values: [0, 2] }), /request\.values\[1\] must be 0 or 1/);
    rejects(req({ ...input, values: [1] }), /request\.values is only for direction 'output'/);
    rejects(req({ ...output, edges: true }), /request\.edges is only for direction 'input'/);
    rejects(req({ ...output, debounceUs: 1000 }), /request\.debounceUs is only for direction 'input'/);
    rejects(req({ ...input, debounceUs: -1 }), /request\.debounceUs must be an integer/);
    rejects(req({ ...input, eventBufferSize: 1.5 }), /request\.eventBufferSize must be a non-negative integer/);
    rejects(req({ ...input, edges: 'yes' }), /request\.edges must be a boolean/);
    rejects(req({ ...input, direction: 'in' }), /request\.direction must be 'input' or 'output'/);
    rejects(req({ ...input, consumer: '' }), /request\.consumer must be a non-empty string/);
    rejects(req({ ...input, consumer: 42 }), /request\.consumer/);
    rejects(() => binding.requestLines('/dev/null', null as unknown as LineRequest), /request must be an object/);
    rejects(() => binding.requestLines('', input), /path must be a non-empty string/);
  });

  it('a long consumer is accepted (the addon truncates it to the kernel field)', () => {
    // Truncation itself is not observable without a chip; the request reaches the kernel (ENOTTY on /dev/null).
    expect(() => binding.requestLines('/dev/null', { ...input, consumer: 'door-agent front door — très long nom '.repeat(4) })).toThrow(
      expect.objectContaining({ code: 'ENOTTY' }),
    );
  });

  it('the other functions', () => {
    const any = binding as unknown as Record<string, (...args: unknown[]) => unknown>;
    rejects(() => any.chipInfo!(17), /chipInfo\(path\): path must be a non-empty string/);
    rejects(() => any.lineInfo!('/dev/null', 1.5), /lineInfo\(path, offset\): offset must be an integer/);
    rejects(() => any.getValues!(-1, 1), /getValues\(fd, mask\): fd must be a non-negative integer/);
    rejects(() => any.getValues!(0, 2 ** 32), /getValues\(fd, mask\): mask must be an integer from 0 to 0xffffffff/);
    rejects(() => any.setValues!(0, 1, 0.5), /setValues\(fd, mask, bits\): bits must be an integer/);
    rejects(() => any.readEvents!('3'), /readEvents\(fd\): fd must be a non-negative integer/);
    rejects(() => any.watch!(0, 'x', () => {}), /onReadable must be a function/);
    rejects(() => any.watch!(0, () => {}, null), /onError must be a function/);
    rejects(() => any.close!(undefined), /close\(fd\): fd must be a non-negative integer/);
  });
});

describe('readEvents and watch on a FIFO standing in for a line request', () => {
  const rising = lineEvent(123_456_789_012n, 1, 17, 1, 1);
  const falling = lineEvent(123_456_999_999n, 2, 17, 2, 2);

  it('onReadable fires when records arrive; readEvents returns exactly the bytes queued, then null', async () => {
    const fd = fifoFd();
    expect(binding.readEvents(fd)).toBeNull();
    const reads: Array<Buffer | null> = [];
    const errors: string[] = [];
    let calls = 0;
    const watcher = binding.watch(
      fd,
      () => {
        calls++;
        reads.push(binding.readEvents(fd), binding.readEvents(fd));
      },
      (message) => errors.push(message),
    );
    cleanups.push(() => watcher.close());
    await sleep(50);
    expect(calls).toBe(0); // nothing to read yet
    writeSync(fd, Buffer.concat([rising, falling])); // 96 bytes, one atomic pipe write
    await waitFor(() => calls >= 1, 'onReadable');
    expect(reads[0]).toEqual(Buffer.concat([rising, falling]));
    expect(reads[1]).toBeNull();
    const got = reads[0]!;
    expect(got.length).toBe(96);
    expect(got.readBigUInt64LE(48)).toBe(123_456_999_999n);
    expect(got.readUInt32LE(48 + 8)).toBe(2);
    expect(errors).toEqual([]);

    // Closed: no more calls, the fd stays open with its data.
    watcher.close();
    const before = calls;
    writeSync(fd, rising);
    await sleep(100);
    expect(calls).toBe(before);
    expect(binding.readEvents(fd)).toEqual(rising);
    expect(() => watcher.close()).not.toThrow();
    expect(errors).toEqual([]);
  });

  it('keeps calling while records stay queued (level-triggered) and stops once drained', async () => {
    const fd = fifoFd();
    let calls = 0;
    const watcher = binding.watch(
      fd,
      () => {
        calls++;
        if (calls === 3) binding.readEvents(fd);
      },
      () => {},
    );
    cleanups.push(() => watcher.close());
    writeSync(fd, rising);
    await waitFor(() => calls >= 3, 'three calls while undrained');
    await sleep(100);
    expect(calls).toBe(3);
    watcher.close();
  });

  it('a watcher can close itself from its callback', async () => {
    const fd = fifoFd();
    let calls = 0;
    const watcher = binding.watch(
      fd,
      () => {
        calls++;
        watcher.close();
        watcher.close();
      },
      () => {},
    );
    writeSync(fd, rising); // never read: without the close it would fire on every loop turn
    await waitFor(() => calls >= 1, 'onReadable');
    await sleep(100);
    expect(calls).toBe(1);
  });

  it('the close function works detached from its object, and after close the fd can be watched again', async () => {
    const fd = fifoFd();
    let first = 0;
    let second = 0;
    const { close } = binding.watch(
      fd,
      () => first++,
      () => {},
    );
    close();
    await sleep(20); // uv_close completes on a later loop turn
    const again = binding.watch(
      fd,
      () => {
        second++;
        binding.readEvents(fd);
      },
      () => {},
    );
    cleanups.push(() => again.close());
    writeSync(fd, rising);
    await waitFor(() => second >= 1, 'the second watcher');
    expect(first).toBe(0);
  });

  it('microtasks queued by onReadable run right after it, before the next macrotask (a real callback scope)', async () => {
    const fd = fifoFd();
    const order: string[] = [];
    const watcher = binding.watch(
      fd,
      () => {
        binding.readEvents(fd);
        order.push('callback');
        void Promise.resolve().then(() => order.push('microtask'));
        setImmediate(() => order.push('immediate'));
      },
      () => {},
    );
    cleanups.push(() => watcher.close());
    writeSync(fd, rising);
    await waitFor(() => order.includes('immediate'), 'the immediate');
    expect(order.slice(0, 3)).toEqual(['callback', 'microtask', 'immediate']);
  });

  it('an error from poll (EPOLLERR) goes to onError once, and the watcher stops', async () => {
    // The write end of a FIFO reports EPOLLERR once its reader is gone.
    const path = mkfifo();
    const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    fds.push(writer);
    const errors: string[] = [];
    let readable = 0;
    const watcher = binding.watch(
      writer,
      () => readable++,
      (message) => errors.push(message),
    );
    cleanups.push(() => watcher.close());
    closeSync(reader);
    await waitFor(() => errors.length >= 1, 'onError');
    await sleep(100);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^polling fd ${writer} failed: .*\\(EBADF\\)`));
    expect(readable).toBe(0);
    expect(() => watcher.close()).not.toThrow();
  });

  it('an exception thrown by onReadable is an uncaught exception, as from any Node callback', () => {
    const path = mkfifo();
    const common = `
      const fs = require('node:fs');
      const fd = fs.openSync(${JSON.stringify(path)}, fs.constants.O_RDWR | fs.constants.O_NONBLOCK);
      const watcher = addon.watch(fd, () => { addon.readEvents(fd); throw new Error('boom from onReadable'); }, () => {});
      fs.writeSync(fd, Buffer.alloc(48));
      setTimeout(() => { console.log('no exception within 5 s'); process.exit(3); }, 5000);`;
    const handled = runNode(`
      process.on('uncaughtException', (err) => { console.log('uncaughtException: ' + err.message); watcher.close(); process.exit(0); });
      ${common}`);
    expect(handled.stdout).toBe('uncaughtException: boom from onReadable\n');
    expect(handled.status).toBe(0);

    const unhandled = runNode(common);
    expect(unhandled.status).toBe(1);
    expect(unhandled.stderr).toContain('Error: boom from onReadable');
    expect(unhandled.stdout).toBe('');
  });
});

// A stand-in for the kernel's side of the GPIO ioctls, preloaded into a child node: it answers the chip and line
// ioctls for a 54-line chip whose line 4 is held by "other-program", logs each request struct as hex, and hands
// back the read end of a pipe as the request fd. Every other ioctl goes to libc.
const FAKE_KERNEL_C = String.raw`
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/gpio.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void log_hex(const char *what, const void *p, size_t n) {
  FILE *f = fopen(getenv("FAKE_GPIO_LOG"), "a");
  if (!f) return;
  fprintf(f, "%s ", what);
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x", ((const unsigned char *)p)[i]);
  fprintf(f, "\n");
  fclose(f);
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  switch (request) {
    case GPIO_GET_CHIPINFO_IOCTL: {
      struct gpiochip_info *info = arg;
      memset(info, 0, sizeof *info);
      strcpy(info->name, "gpiochip0");
      strcpy(info->label, "pinctrl-fake");
      info->lines = 54;
      return 0;
    }
    case GPIO_V2_GET_LINEINFO_IOCTL: {
      struct gpio_v2_line_info *info = arg;
      unsigned offset = info->offset;
      if (offset >= 54) { errno = EINVAL; return -1; }
      memset(info, 0, sizeof *info);
      info->offset = offset;
      snprintf(info->name, sizeof info->name, "GPIO%u", offset);
      if (offset == 4) strcpy(info->consumer, "other-program");
      info->flags = offset == 4 ? (GPIO_V2_LINE_FLAG_USED | GPIO_V2_LINE_FLAG_OUTPUT) : GPIO_V2_LINE_FLAG_INPUT;
      return 0;
    }
    case GPIO_V2_GET_LINE_IOCTL: {
      struct gpio_v2_line_request *req = arg;
      log_hex("request", req, sizeof *req);
      for (unsigned i = 0; i < req->num_lines; i++) {
        if (req->offsets[i] == 4) { errno = EBUSY; return -1; }
        if (req->offsets[i] >= 54) { errno = EINVAL; return -1; }
      }
      int p[2];
      if (pipe(p) < 0) return -1;
      req->fd = p[0];
      return 0;
    }
    case GPIO_V2_LINE_GET_VALUES_IOCTL: {
      struct gpio_v2_line_values *lv = arg;
      log_hex("get", lv, sizeof *lv);
      lv->bits = 0x5 & lv->mask;
      return 0;
    }
    case GPIO_V2_LINE_SET_VALUES_IOCTL:
      log_hex("set", arg, sizeof(struct gpio_v2_line_values));
      return 0;
  }
  static int (*real)(int, unsigned long, ...);
  if (!real) real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
  return real(fd, request, arg);
}
`;

describe('the structs handed to the kernel (an LD_PRELOAD stand-in for the GPIO ioctls)', () => {
  let shim = '';
  let run = 0;
  /** Runs `script` with the fake kernel preloaded; returns its stdout lines as JSON and the logged structs. */
  function withFakeKernel(script: string): { out: unknown[]; log: Array<{ what: string; bytes: Buffer }> } {
    if (!shim) {
      if (spawnSync('cc', ['--version']).status !== 0)
        throw new Error('the fake kernel is compiled with cc: sudo apt-get install -y gcc (the native addons need it too)');
      const src = join(tmp.path, 'fake-gpio-kernel.c');
      writeFileSync(src, FAKE_KERNEL_C);
      shim = join(tmp.path, 'fake-gpio-kernel.so');
      const cc = spawnSync('cc', ['-shared', '-fPIC', '-Wall', '-o', shim, src, '-ldl'], { encoding: 'utf8' });
      if (cc.status !== 0) throw new Error(`cc failed: ${cc.stderr}`);
    }
    const logPath = join(tmp.path, `fake-gpio-${run++}.log`);
    const r = spawnSync(
      process.execPath,
      ['-e', `const addon = require(${JSON.stringify(ADDON)});\nconst out = (v) => console.log(JSON.stringify(v));\n${script}`],
      {
        encoding: 'utf8',
        timeout: 20_000,
        env: { ...process.env, LD_PRELOAD: shim, FAKE_GPIO_LOG: logPath },
      },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const log = existsSync(logPath)
      ? readFileSync(logPath, 'utf8')
          .trim()
          .split('\n')
          .map((line) => {
            const [what, hex] = line.split(' ');
            return { what: what!, bytes: Buffer.from(hex!, 'hex') };
          })
      : [];
    return {
      out: r.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as unknown),
      log,
    };
  }

  // struct gpio_v2_line_request (592 bytes): offsets[64] u32 @0, consumer[32] @256, config @288 (flags u64 @288,
  // num_attrs u32 @296, padding[5], attrs[10] @320, each 24 bytes: id u32, padding u32, value u64, mask u64),
  // num_lines u32 @560, event_buffer_size u32 @564, padding[5] @568, fd s32 @588.
  function parseRequest(b: Buffer) {
    expect(b.length).toBe(592);
    const numLines = b.readUInt32LE(560);
    const numAttrs = b.readUInt32LE(296);
    return {
      offsets: Array.from({ length: numLines }, (_, i) => b.readUInt32LE(4 * i)),
      consumer: b.subarray(256, 288),
      flags: b.readBigUInt64LE(288),
      attrs: Array.from({ length: numAttrs }, (_, i) => {
        const at = 320 + 24 * i;
        return { id: b.readUInt32LE(at), value: b.readBigUInt64LE(at + 8), mask: b.readBigUInt64LE(at + 16) };
      }),
      eventBufferSize: b.readUInt32LE(564),
      zeroPadding: b.subarray(300, 320).every((x) => x === 0) && b.subarray(568, 588).every((x) => x === 0),
    };
  }
  const FLAG = { INPUT: 4n, OUTPUT: 8n, EDGE_RISING: 16n, EDGE_FALLING: 32n, PULL_UP: 256n, PULL_DOWN: 512n, BIAS_DISABLED: 1024n };

  it('outputs: claimed with their initial levels in the same request (OUTPUT_VALUES over every line)', () => {
    const { out, log } = withFakeKernel(`
      const fd = addon.requestLines('/dev/null', { consumer: 'door-agent', offsets: [17, 27, 22], direction: 'output', values: [0, 1, 1], bias: 'pull-down' });
      const flags = require('node:fs').readFileSync('/proc/self/fdinfo/' + fd, 'utf8').match(/flags:\\s*(\\d+)/)[1];
      out({ fd, flags });
      addon.setValues(fd, 0b101, 0b111);
      out(addon.getValues(fd, 0b110));
      addon.close(fd);`);
    const [{ flags }, values] = out as [{ fd: number; flags: string }, number];
    // O_NONBLOCK (04000) and O_CLOEXEC (02000000) on the returned fd.
    expect(parseInt(flags, 8) & 0o4000).toBe(0o4000);
    expect(parseInt(flags, 8) & 0o2000000).toBe(0o2000000);
    expect(values).toBe(0b100); // the fake's levels 0b101, masked
    const req = parseRequest(log[0]!.bytes);
    expect(req.offsets).toEqual([17, 27, 22]);
    expect(req.consumer.toString('latin1')).toBe('door-agent'.padEnd(32, '\0'));
    expect(req.flags).toBe(FLAG.OUTPUT | FLAG.PULL_DOWN);
    expect(req.attrs).toEqual([{ id: 2, value: 0b110n, mask: 0b111n }]); // GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES
    expect(req.eventBufferSize).toBe(0);
    expect(req.zeroPadding).toBe(true);
    // gpio_v2_line_values { bits u64, mask u64 }
    expect(log[1]).toEqual({ what: 'set', bytes: Buffer.from('0500000000000000' + '0500000000000000', 'hex') });
    expect(log[2]!.what).toBe('get');
    expect(log[2]!.bytes.readBigUInt64LE(8)).toBe(0b110n);
  });

  it('inputs: bias, both edges, debounce on every line, the event buffer size; as-is sets no bias flag', () => {
    const { log } = withFakeKernel(`
      addon.close(addon.requestLines('/dev/null', { consumer: 'door-agent', offsets: [5, 6], direction: 'input', bias: 'pull-up', edges: true, debounceUs: 5000, eventBufferSize: 64 }));
      addon.close(addon.requestLines('/dev/null', { consumer: 'door-agent', offsets: [9], direction: 'input', bias: 'as-is', edges: false, debounceUs: 0 }));
      addon.close(addon.requestLines('/dev/null', { consumer: 'door-agent', offsets: [9], direction: 'input', bias: 'disabled' }));`);
    const [edges, plain, disabled] = log.map((l) => parseRequest(l.bytes));
    expect(edges!.flags).toBe(FLAG.INPUT | FLAG.PULL_UP | FLAG.EDGE_RISING | FLAG.EDGE_FALLING);
    expect(edges!.attrs).toEqual([{ id: 3, value: 5000n, mask: 0b11n }]); // GPIO_V2_LINE_ATTR_ID_DEBOUNCE (u32 in the union)
    expect(edges!.eventBufferSize).toBe(64);
    expect(plain!.flags).toBe(FLAG.INPUT);
    expect(plain!.attrs).toEqual([]);
    expect(disabled!.flags).toBe(FLAG.INPUT | FLAG.BIAS_DISABLED);
  });

  it('a long consumer is cut to 31 bytes at a character boundary', () => {
    const { log } = withFakeKernel(`addon.close(addon.requestLines('/dev/null', { consumer: 'é'.repeat(40), offsets: [5], direction: 'input' }));`);
    const consumer = parseRequest(log[0]!.bytes).consumer;
    expect(consumer.subarray(0, 30).toString('utf8')).toBe('é'.repeat(15));
    expect(consumer.subarray(30).every((x) => x === 0)).toBe(true);
  });

  it('chip and line info, a line held by another program (EBUSY), a line the chip does not have (EINVAL)', () => {
    const { out } = withFakeKernel(`
      out(addon.chipInfo('/dev/null'));
      out(addon.lineInfo('/dev/null', 4));
      out(addon.lineInfo('/dev/null', 17));
      for (const f of [() => addon.requestLines('/dev/null', { consumer: 'door-agent', offsets: [17, 4], direction: 'input' }),
                       () => addon.requestLines('/dev/null', { consumer: 'door-agent', offsets: [17, 60], direction: 'input' }),
                       () => addon.lineInfo('/dev/null', 99)]) {
        try { f(); out('no error'); } catch (e) { out({ code: e.code, message: e.message }); }
      }`);
    expect(out[0]).toEqual({ name: 'gpiochip0', label: 'pinctrl-fake', lines: 54 });
    expect(out[1]).toEqual({ offset: 4, name: 'GPIO4', consumer: 'other-program', used: true, output: true });
    expect(out[2]).toEqual({ offset: 17, name: 'GPIO17', consumer: '', used: false, output: false });
    expect(out[3]).toEqual({
      code: 'EBUSY',
      message: expect.stringMatching(/held by another program or a kernel driver: line 4 \(consumer "other-program"\).*`gpioinfo`/),
    });
    expect(out[4]).toEqual({ code: 'EINVAL', message: expect.stringContaining('/dev/null (pinctrl-fake) has no line 60: its lines are 0 to 53') });
    expect(out[5]).toEqual({ code: 'EINVAL', message: expect.stringContaining('has no line 99') });
  });
});
