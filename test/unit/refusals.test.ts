import { describe, expect, it } from 'vitest';
import type { Logger } from 'pino';
import { Refusals } from '../../src/service/refusals.js';
import { ManualTime } from '../support/manualTime.js';

// Issue 28 items 2 and 6: shed requests are counted by reason, logged at most once a minute per reason (with how
// many since the line before), and told when to come back.
describe('Refusals', () => {
  it('counts every refusal, logs one line a minute per reason, and draws Retry-After between the setting and twice it', () => {
    const lines: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const logger = { warn: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }) } as unknown as Logger;
    const time = new ManualTime();
    const draws = [0, 0.999, 0.5];
    const refusals = new Refusals(logger, time, 5, () => draws.shift() ?? 0);
    expect(refusals.refuse('directory_answers', '/directory', 'too many')).toBe(5);
    expect(refusals.refuse('directory_answers', '/directory', 'too many')).toBe(9);
    expect(refusals.refuse('directory_builds', '/directory', 'busy')).toBe(7);
    refusals.count('connections');
    expect(lines.map((l) => [l.fields.reason, l.fields.refused])).toEqual([
      ['directory_answers', 1],
      ['directory_builds', 1],
    ]);
    expect(lines[0]!.message).toBe('requests refused (503 with Retry-After): too many');
    expect(lines[0]!.fields.path).toBe('/directory');
    time.mono += 60_000;
    refusals.refuse('directory_answers', '/directory', 'too many');
    expect(lines.at(-1)!.fields).toMatchObject({ reason: 'directory_answers', refused: 2, total: 3 });
    expect(refusals.counts()).toEqual({ directory_answers: 3, directory_builds: 1, connections: 1, stopping: 0, database: 0 });
  });
});
