import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CLOCK_RECHECK_MS, ClockSyncWatch } from '../../src/door/clockSyncWatch.js';
import { ManualTime } from '../support/manualTime.js';

const quiet = pino({ level: 'silent' });
const settle = () => new Promise((resolve) => setImmediate(resolve));

function watch(answers: { now: boolean; later: () => boolean }) {
  const time = new ManualTime();
  let asked = 0;
  const w = new ClockSyncWatch({
    probeNow: () => answers.now,
    probeLater: async () => {
      asked++;
      return answers.later();
    },
    timers: time,
    logger: quiet,
  });
  return { w, time, asked: () => asked };
}

describe('ClockSyncWatch (issue 32 item 11)', () => {
  it('synchronized at start: no re-checks, no listener call', () => {
    const t = watch({ now: true, later: () => true });
    const heard: number[] = [];
    t.w.onSynchronized(() => heard.push(1));
    t.w.start();
    expect(t.w.synchronized()).toBe(true);
    t.time.advance(10 * CLOCK_RECHECK_MS);
    expect(t.asked()).toBe(0);
    expect(heard).toEqual([]);
  });

  it('not synchronized: asked again every CLOCK_RECHECK_MS until yes, then the listeners run once and it stays so', async () => {
    let later = false;
    const t = watch({ now: false, later: () => later });
    const heard: number[] = [];
    t.w.onSynchronized(() => heard.push(1));
    t.w.start();
    expect(t.w.synchronized()).toBe(false);
    t.time.advance(CLOCK_RECHECK_MS - 1);
    expect(t.asked()).toBe(0);
    t.time.advance(1);
    await settle();
    expect(t.asked()).toBe(1);
    t.time.advance(CLOCK_RECHECK_MS);
    await settle();
    expect(t.asked()).toBe(2);
    expect(t.w.synchronized()).toBe(false);
    later = true;
    t.time.advance(CLOCK_RECHECK_MS);
    await settle();
    expect(t.w.synchronized()).toBe(true);
    expect(heard).toEqual([1]);
    later = false; // an NTP server lost later leaves a clock that was right
    t.time.advance(10 * CLOCK_RECHECK_MS);
    await settle();
    expect(t.asked()).toBe(3);
    expect(t.w.synchronized()).toBe(true);
    expect(heard).toEqual([1]);
  });

  it('a probe that fails counts as no; stopped, it asks no more', async () => {
    const t = watch({
      now: false,
      later: () => {
        throw new Error('timedatectl vanished');
      },
    });
    t.w.start();
    t.time.advance(CLOCK_RECHECK_MS);
    await settle();
    expect(t.w.synchronized()).toBe(false);
    expect(t.time.pendingCount).toBe(1);
    t.w.stop();
    expect(t.time.pendingCount).toBe(0);
  });

  it('an answer that arrives after stop is ignored (no listener, no new timer)', async () => {
    const t = watch({ now: false, later: () => true });
    const heard: number[] = [];
    t.w.onSynchronized(() => heard.push(1));
    t.w.start();
    t.time.advance(CLOCK_RECHECK_MS); // asked; the answer is still on its way
    t.w.stop();
    await settle();
    expect(heard).toEqual([]);
    expect(t.time.pendingCount).toBe(0);
  });
});
