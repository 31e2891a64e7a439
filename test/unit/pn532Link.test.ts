import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { encodeFrame, TFI_PN532 } from '../../src/readers/pn532/frames.js';
import { Pn532Link } from '../../src/readers/pn532/link.js';
import { ManualTime } from '../support/manualTime.js';

// The command exchange on an injected clock: what is written, and what the link makes of each answer.
const ACK = Buffer.from([0x00, 0x00, 0xff, 0x00, 0xff, 0x00]);
const NACK = Buffer.from([0x00, 0x00, 0xff, 0xff, 0x00, 0x00]);
const FIRMWARE = encodeFrame(Buffer.from([0x03, 0x32, 0x01, 0x06, 0x07]), TFI_PN532);

function setup() {
  const time = new ManualTime();
  const written: Buffer[] = [];
  const debug: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void debug.push(JSON.parse(line).msg) });
  const link = new Pn532Link({ write: (b) => void written.push(b), timers: time, logger, timing: { ackTimeoutMs: 100, responseTimeoutMs: 500, attempts: 3 } });
  const result: { data?: Buffer; error?: Error } = {};
  link.command(Buffer.from([0x02])).then(
    (data) => void (result.data = data),
    (error: Error) => void (result.error = error),
  );
  return { time, written, debug, link, result };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('the PN532 command exchange', () => {
  it('ACK then the answer: resolved with the data after the answer code', async () => {
    const t = setup();
    t.link.receive(ACK);
    t.link.receive(FIRMWARE);
    await settle();
    expect(t.result.data).toEqual(Buffer.from([0x32, 0x01, 0x06, 0x07]));
    expect(t.written).toHaveLength(1);
  });

  it('a NACK sends the command again; an answer within the response timeout is taken', async () => {
    const t = setup();
    t.link.receive(NACK);
    expect(t.written).toHaveLength(2);
    t.link.receive(ACK);
    t.time.advance(450); // late, but within the timeout
    t.link.receive(FIRMWARE);
    await settle();
    expect(t.result.data).toBeDefined();
  });

  it('an answer past its timeout: the command is aborted (ACK) and sent again, and the late answer, coming before the new ACK, is ignored', async () => {
    const t = setup();
    t.link.receive(ACK);
    t.time.advance(500);
    expect(t.written.slice(1)).toEqual([ACK, t.written[0]]);
    t.link.receive(FIRMWARE); // the first attempt's answer, late
    await settle();
    expect(t.result.data).toBeUndefined();
    expect(t.debug).toContain('PN532 answer ignored: late, or not for the command outstanding');
    t.link.receive(ACK);
    t.link.receive(FIRMWARE);
    await settle();
    expect(t.result.data).toBeDefined();
  });

  it('no ACK after every attempt: refused with the reason, and nothing is left waiting', async () => {
    const t = setup();
    t.time.advance(100);
    t.time.advance(100);
    t.time.advance(100);
    await settle();
    expect(t.written).toHaveLength(3);
    expect(t.result.error?.message).toBe('PN532 command 0x02: no ACK');
    expect(t.time.pendingCount).toBe(0);
  });
});
