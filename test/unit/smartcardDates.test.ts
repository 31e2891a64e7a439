import { describe, it, expect } from 'vitest';
import { guestLinkSchema, smartcardSchema, userDetailSchema } from '../../src/api/shapes.js';
import { problemsInOneLine } from '../../src/util/issues.js';

/** The problems of a refused body on one line, as a sync or an import reports them ('' when accepted). */
function problems(schema: { safeParse: (v: unknown) => { success: boolean; error?: { issues: unknown[] } } }, value: unknown): string {
  const result = schema.safeParse(value);
  return result.success ? '' : problemsInOneLine(result.error!.issues as never);
}

describe('smartcardSchema: valid_from and valid_until', () => {
  it.each<[string, Record<string, unknown>]>([
    ['no dates', {}],
    ['both null', { valid_from: null, valid_until: null }],
    ['from only', { valid_from: '2026-01-01 00:00:00' }],
    ['until only', { valid_until: '2026-12-31 00:00:00' }],
    ['until one second after from', { valid_from: '2026-01-01 00:00:00', valid_until: '2026-01-01 00:00:01' }],
  ])('accepts %s', (_name, dates) => {
    const parsed = smartcardSchema.safeParse({ number: '4213578', label: 'badge', ...dates });
    expect(parsed.success).toBe(true);
    expect(parsed.data).toMatchObject(dates);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['until equal to from', { valid_from: '2026-06-01 00:00:00', valid_until: '2026-06-01 00:00:00' }, 'valid_until: is not after valid_from'],
    ['until before from', { valid_from: '2026-06-01 00:00:00', valid_until: '2026-05-31 23:59:59' }, 'valid_until: is not after valid_from'],
    ['a from that is no date', { valid_from: 'tomorrow' }, 'valid_from: expected a UTC date "YYYY-MM-DD hh:mm:ss"'],
    ['an until in ISO form', { valid_until: '2026-06-01T00:00:00Z' }, 'valid_until: expected a UTC date "YYYY-MM-DD hh:mm:ss"'],
    ['a date that does not exist', { valid_until: '2026-02-30 00:00:00' }, 'valid_until: expected a UTC date "YYYY-MM-DD hh:mm:ss"'],
    ['a number', { valid_from: 1767225600 }, 'valid_from: expected string, received number'],
  ])('refuses %s, naming the field', (_name, dates, problem) => {
    expect(problems(smartcardSchema, { number: '4213578', ...dates })).toBe(problem);
  });

  it('names the card in a GET /user detail and in a guest link, as a sync, an import or MQTT reports it', () => {
    const bad = { number: '4213578', valid_from: '2026-06-01 00:00:00', valid_until: '2026-01-01 00:00:00' };
    expect(problems(userDetailSchema, { smartcards: [{ number: '1234567' }, bad] })).toBe('smartcards[1].valid_until: is not after valid_from');
    const link = { magic_link_id: '7', magic_token: 'token-0123456789abcdef', name: 'Visitor', resource_id_list: [12], smartcards: [bad] };
    expect(problems(guestLinkSchema, link)).toBe('smartcards[0].valid_until: is not after valid_from');
  });
});
