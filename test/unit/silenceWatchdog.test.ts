import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SilenceWatchdog } from '../../src/util/silenceWatchdog.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Keeps the thread busy, as a long synchronous task does: no timer, no socket is served meanwhile. */
const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

const children: ChildProcess[] = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const c of children.splice(0)) c.kill();
});

/**
 * A loopback connection whose far end, another process, sends one line `afterMs` after it connects: the bytes
 * arrive while this thread may be busy.
 */
async function answeringAfter(afterMs: number): Promise<Socket> {
  const script = `const s = require('node:net').createServer((p) => setTimeout(() => p.write('answer\\n'), ${afterMs}));
s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const port = await new Promise<number>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  await new Promise<void>((r) => socket.once('connect', () => r()));
  return socket;
}

describe('SilenceWatchdog', () => {
  it('fires once the connection has been silent for its time, and only once', async () => {
    let fired = 0;
    const dog = new SilenceWatchdog(50, () => fired++);
    await sleep(1000);
    dog.stop();
    expect(fired).toBe(1);
  });

  it('stays quiet while something keeps arriving, and never fires after stop()', async () => {
    let fired = 0;
    const dog = new SilenceWatchdog(300, () => fired++);
    for (let i = 0; i < 10; i++) {
      await sleep(50);
      dog.touch();
    }
    dog.stop();
    await sleep(600);
    expect(fired).toBe(0);
  });

  it('judges nothing while paused (the reader holds the bytes back), and counts the silence again from resume()', async () => {
    let fired = 0;
    const dog = new SilenceWatchdog(50, () => fired++);
    dog.pause();
    await sleep(400); // eight times its time, paused
    expect(fired).toBe(0);
    dog.resume();
    await expect.poll(() => fired, { timeout: 5000 }).toBe(1);
    dog.stop();
  });

  it('ends a pause that lasts past its bound as stuck, once (a reader that never finishes its chunk)', async () => {
    const why: string[] = [];
    const dog = new SilenceWatchdog(50, (w) => why.push(w), undefined, 300);
    dog.pause();
    await sleep(150);
    expect(why).toEqual([]); // paused past its time, within its bound
    await expect.poll(() => why, { timeout: 5000 }).toEqual(['stuck']);
    await sleep(200);
    dog.stop();
    expect(why).toEqual(['stuck']);
  });

  it('after the thread was busy longer than its time, reads the answer that arrived meanwhile before judging', async () => {
    // The far end answers 50 ms in; this thread is busy for 1.5 s (five times the watchdog's 300 ms) meanwhile.
    const socket = await answeringAfter(50);
    const order: string[] = [];
    const dog = new SilenceWatchdog(300, () => order.push('watchdog fired'));
    const plain = setTimeout(() => order.push('plain timer fired'), 300);
    socket.on('data', () => {
      order.push('answer read');
      dog.touch();
      dog.stop(); // the whole answer: done, as the client is
    });
    busy(1500);
    await sleep(500);
    dog.stop();
    clearTimeout(plain);
    // A plain timer runs before the socket is read (the loop's timers phase comes first): it would have aborted.
    expect(order).toEqual(['plain timer fired', 'answer read']);
  });
});
