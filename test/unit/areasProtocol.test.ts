import { describe, expect, it } from 'vitest';
import { musterList, occupancyPayload, parseAreaReset } from '../../src/protocol/areas.js';
import { retainedPayload } from '../../src/protocol/retainedMessages.js';

// Areas on MQTT (docs/mqtt.md, "Areas"): the muster list's payload and the reset command, signed as the lockdown is.
const SECRET = 'a-command-secret-of-at-least-32-bytes!!';
const CONTEXT = 'areas reset agent:lobby-pi';

describe('the reset command', () => {
  it('unsigned: one area, or every area (null or no area); by is optional', () => {
    expect(parseAreaReset(Buffer.from('{"area":"lab","by":"Fire marshal"}'), 'lobby-pi', null)).toEqual({
      area: 'lab',
      by: 'Fire marshal',
      requestId: null,
      issuedAt: null,
    });
    expect(parseAreaReset(Buffer.from('{"area":null}'), 'lobby-pi', null)).toMatchObject({ area: null });
    expect(parseAreaReset(Buffer.from('{}'), 'lobby-pi', null)).toMatchObject({ area: null, by: null });
  });

  it.each([
    ['not JSON', '{"area":', 'not JSON'],
    ['not an object', '["lab"]', 'not a JSON object'],
    ['an area that is not a string', '{"area":5}', 'area: expected string, received number'],
    ['an empty by', '{"area":"lab","by":" "}', 'by: Too small: expected string to have >=1 characters'],
  ])('refused: %s', (_what, payload, refused) => {
    expect(parseAreaReset(Buffer.from(payload), 'lobby-pi', null)).toEqual({ refused, status: 400, requestId: null });
  });

  it('signed: over "areas reset agent:<id>" and the canonical JSON, with a request_id; another agent\'s signature is refused (401, as a door command)', () => {
    const body = { area: 'lab', by: 'Fire marshal', request_id: 'r1' };
    const signed = Buffer.from(retainedPayload(CONTEXT, body, SECRET, 1_795_000_000));
    expect(parseAreaReset(signed, 'lobby-pi', SECRET)).toEqual({ area: 'lab', by: 'Fire marshal', requestId: 'r1', issuedAt: 1_795_000_000 });
    // The reply carries the request_id the sender waits for, though the signature failed.
    expect(parseAreaReset(signed, 'back-pi', SECRET)).toEqual({ refused: 'signature does not match', status: 401, requestId: 'r1' });
    expect(parseAreaReset(Buffer.from(JSON.stringify(body)), 'lobby-pi', SECRET)).toEqual({
      refused: 'unsigned: issued_at and signature are required here',
      status: 401,
      requestId: 'r1',
    });
    const withoutId = Buffer.from(retainedPayload(CONTEXT, { area: 'lab' }, SECRET, 1_795_000_000));
    expect(parseAreaReset(withoutId, 'lobby-pi', SECRET)).toMatchObject({ refused: 'a signed reset needs a request_id', status: 401 });
    // Not a reset at all: 400, signed or not.
    expect(parseAreaReset(Buffer.from('{"area":5}'), 'lobby-pi', SECRET)).toMatchObject({ status: 400 });
  });
});

describe('the muster list', () => {
  it('names each person by holder, id and name, with since and the door; a guest link has no name', () => {
    const list = musterList(
      [
        { holder: 'user:101', since: Date.parse('2026-11-24T09:00:00Z'), door: 'd1' },
        { holder: 'link:501', since: Date.parse('2026-11-24T09:05:00Z'), door: 'd1' },
      ],
      { user: (id) => (id === 101 ? 'Alice Adams' : null), door: () => 'Front door' },
    );
    expect(list).toEqual([
      { holder: 'user:101', email_id: 101, name: 'Alice Adams', since: '2026-11-24T09:00:00.000Z', door: 'd1', door_name: 'Front door' },
      { holder: 'link:501', magic_link_id: '501', name: null, since: '2026-11-24T09:05:00.000Z', door: 'd1', door_name: 'Front door' },
    ]);
    expect(JSON.parse(occupancyPayload({ id: 'lab', name: 'Lab', maxOccupancy: null }, list, Date.parse('2026-11-24T10:00:00Z')))).toMatchObject({
      area: 'lab',
      count: 2,
      max: null,
      at: '2026-11-24T10:00:00.000Z',
    });
  });
});
