import { describe, expect, it } from 'vitest';
import { GrowingBody } from '../../src/service/growingBody.js';

const readAll = async (body: GrowingBody) => {
  const chunks: Buffer[] = [];
  for await (const chunk of body.read()) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
};

// Issue 28 item 1: one build read by every request for it, from its start, while it grows and once complete.
describe('GrowingBody', () => {
  it('every reader gets every chunk from the first, whenever it starts', async () => {
    const body = new GrowingBody();
    body.push(Buffer.from('{"a":'));
    const early = readAll(body);
    await new Promise((r) => setImmediate(r));
    body.push(Buffer.from('1'));
    const middle = readAll(body);
    body.push(Buffer.from('}'));
    expect(body.complete).toBe(false);
    body.end();
    await body.done;
    expect(body.complete).toBe(true);
    expect(body.length).toBe(7);
    expect([await early, await middle, await readAll(body)]).toEqual(['{"a":1}', '{"a":1}', '{"a":1}']);
    expect(Buffer.concat([...body.parts()]).toString()).toBe('{"a":1}');
  });

  it('a failure ends every reader with the error; nothing is pushed after the end', async () => {
    const body = new GrowingBody();
    body.push(Buffer.from('{"a":'));
    const reading = readAll(body);
    body.fail(new Error('the database is gone'));
    await expect(reading).rejects.toThrow('the database is gone');
    await expect(body.done).rejects.toThrow('the database is gone');
    const ended = new GrowingBody();
    ended.end();
    ended.push(Buffer.from('late'));
    expect(ended.length).toBe(0);
  });
});
