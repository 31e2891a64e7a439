import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonMemberStream, JsonSyntaxError, type StreamedMember } from '../../src/snapshot/jsonStream.js';
import { tempDir } from '../support/cli.js';

const tmp = tempDir('door-agent-jsonstream-');
afterAll(tmp.cleanup);
let n = 0;

function stream(text: string, chunkBytes: number, maxValueBytes = 1 << 20): StreamedMember[] {
  const file = join(tmp.path, `f${n++}.json`);
  writeFileSync(file, text);
  const fd = openSync(file, 'r');
  try {
    const s = new JsonMemberStream(fd, { arrays: new Set(['users']), objects: new Set(['details']), maxValueBytes }, chunkBytes);
    return [...s.members()];
  } finally {
    closeSync(fd);
  }
}

/** Rebuilds the document from the streamed members, to compare with JSON.parse. */
function rebuild(members: StreamedMember[]): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  for (const m of members) {
    if (m.kind === 'start') doc[m.section] = m.section === 'users' ? [] : {};
    else if (m.kind === 'element') ((doc[m.section] ??= []) as unknown[])[m.index] = JSON.parse(m.raw);
    else if (m.kind === 'entry') ((doc[m.section] ??= {}) as Record<string, unknown>)[m.key] = JSON.parse(m.raw);
    else doc[m.section] = JSON.parse(m.raw);
  }
  return doc;
}

// A small deterministic generator of awkward JSON: escaped quotes and backslashes, brackets inside strings,
// multi-byte UTF-8 (é, 😀, U+2028), nesting, scalars.
function randomValue(random: () => number, depth: number): unknown {
  const pick = Math.floor(random() * (depth > 3 ? 4 : 7));
  const strings = ['plain', 'quote " inside', 'back\\slash', 'brackets [{]}', 'é😀\u2028', '', ',:{"x":1}'];
  switch (pick) {
    case 0:
      return strings[Math.floor(random() * strings.length)];
    case 1:
      return Math.floor(random() * 1e9) - 5e8;
    case 2:
      return random() < 0.5;
    case 3:
      return null;
    case 4:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, i) => [`${strings[i % strings.length]}${i}`, randomValue(random, depth + 1)]),
      );
  }
}

function prng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
}

describe('JsonMemberStream', () => {
  it('yields the same document as JSON.parse, for any chunk size, on awkward random documents', () => {
    const random = prng(7);
    for (let doc = 0; doc < 300; doc++) {
      const value = {
        users: Array.from({ length: 1 + Math.floor(random() * 5) }, () => randomValue(random, 0)),
        details: Object.fromEntries(Array.from({ length: 1 + Math.floor(random() * 4) }, (_, i) => [`k"${i}é`, randomValue(random, 0)])),
        other: randomValue(random, 0),
      };
      const text = JSON.stringify(value, null, doc % 2 === 0 ? undefined : 2);
      const chunk = 1 + (doc % 17);
      expect(rebuild(stream(text, chunk)), `document ${doc}, chunk ${chunk}`).toEqual(JSON.parse(text));
    }
  });

  it('handles an escaped quote and a multi-byte character straddling a chunk boundary', () => {
    const prefix = '{"users":["';
    for (let pad = 0; pad < 8; pad++) {
      const value = `${'a'.repeat(pad)}\\"é😀"]}`;
      const text = `${prefix}${value}`;
      for (const chunk of [2, 3, 5, 7]) expect(rebuild(stream(text, chunk))).toEqual(JSON.parse(text));
    }
  });

  it('reports where the structure breaks, and a truncated file as truncated', () => {
    expect(() => stream('{"users": [1, 2,', 4)).toThrow(/ends .*truncated/);
    expect(() => stream('{"users": [1 2]}', 4)).toThrow(/expected ',' or '\]' in "users", found '2' at byte 13/);
    expect(() => stream('[]', 4)).toThrow(JsonSyntaxError);
    expect(() => stream('{"users": []} {', 4)).toThrow(/unexpected '\{' after the end/);
  });

  it('refuses a value larger than the limit instead of buffering it', () => {
    const text = `{"users": ["${'x'.repeat(5000)}"]}`;
    expect(() => stream(text, 256, 4096)).toThrow(/a value larger than 4096 bytes at byte 11/);
    expect(rebuild(stream(text, 256, 8192))).toEqual(JSON.parse(text));
  });

  it('marks where each streamed section starts, so an empty array or object is still seen', () => {
    const members = stream('{"users": [], "details": {}}', 3);
    expect(members.map((m) => [m.kind, m.section])).toEqual([
      ['start', 'users'],
      ['start', 'details'],
    ]);
    expect(rebuild(members)).toEqual({ users: [], details: {} });
  });

  it('reads the elements of a top-level array from any byte source (an HTTP list answer)', () => {
    const text = Buffer.from(JSON.stringify([{ email_id: 1 }, { email_id: 2, name: 'é]"' }, 3]));
    let at = 0;
    const source = (buf: Buffer) => {
      const n = text.copy(buf, 0, at, at + 5); // five bytes at a time, whatever the buffer holds
      at += n;
      return n;
    };
    const elements = [...new JsonMemberStream(source, { arrays: new Set(), objects: new Set(), maxValueBytes: 1024 }, 64).elements('')];
    expect(elements.map((e) => JSON.parse(e.raw))).toEqual([{ email_id: 1 }, { email_id: 2, name: 'é]"' }, 3]);
    expect(elements.map((e) => e.index)).toEqual([0, 1, 2]);
    const truncated = Buffer.from('[{"email_id":1},{"ema');
    expect(() => [
      ...new JsonMemberStream((buf) => (at < 1 ? ((at = 1), truncated.copy(buf)) : 0), { arrays: new Set(), objects: new Set(), maxValueBytes: 1024 }).elements(
        '',
      ),
    ]).toThrow(/truncated/);
    expect(() => [...new JsonMemberStream(fileSourceOf('{"a":1}'), { arrays: new Set(), objects: new Set(), maxValueBytes: 1024 }).elements('')]).toThrow(
      /expected a JSON array/,
    );
  });
});

function fileSourceOf(text: string) {
  const data = Buffer.from(text);
  let done = false;
  return (buf: Buffer) => (done ? 0 : ((done = true), data.copy(buf)));
}
