import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  MAX_COMMAND_BYTES,
  isCommandError,
  parseCommand,
  type CommandContext,
  type CommandError,
  type LockAction,
  type ParsedCommand,
} from '../../src/protocol/commands.js';
import { sign, signedString } from '../../src/protocol/signing.js';

const DOOR = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const OTHER_DOOR = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';
const SECRET = 'correct horse battery staple';
const NOW = 1_780_000_000;

function ctx(overrides: Partial<CommandContext> = {}): CommandContext {
  return { doorUuid: DOOR, secret: null, maxAgeSeconds: 30, nowSeconds: NOW, seen: () => false, ...overrides };
}

function parse(payload: string | Buffer | object, overrides: Partial<CommandContext> = {}): ParsedCommand | CommandError {
  const buf = Buffer.isBuffer(payload) ? payload : Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  return parseCommand(buf, ctx(overrides));
}

function ok(result: ParsedCommand | CommandError): ParsedCommand {
  if (isCommandError(result)) throw new Error(`expected a command, got ${result.status}: ${result.error}`);
  return result;
}

function err(result: ParsedCommand | CommandError): CommandError {
  if (!isCommandError(result)) throw new Error(`expected an error, got ${JSON.stringify(result)}`);
  return result;
}

describe('parseCommand, unsigned (no command secret)', () => {
  const accepted: Array<[string, string | object, LockAction]> = [
    ['lock_state true locks', { lock_state: true }, { lock: true }],
    ['lock_state false with unlock_time unlocks for that long', { lock_state: false, unlock_time: 5 }, { lock: false, seconds: 5 }],
    ['lock_state false without unlock_time holds open', { lock_state: false }, { lock: false, seconds: null }],
    ['unlock_time 1 (lower bound)', { lock_state: false, unlock_time: 1 }, { lock: false, seconds: 1 }],
    ['unlock_time 604800 (7 days, upper bound)', { lock_state: false, unlock_time: 604_800 }, { lock: false, seconds: 604_800 }],
    ['a matching uuid', { lock_state: true, uuid: DOOR }, { lock: true }],
    ['a matching uuid in upper case', { lock_state: false, unlock_time: 3, uuid: DOOR.toUpperCase() }, { lock: false, seconds: 3 }],
    ['Home Assistant LOCK', 'LOCK', { lock: true }],
    ['Home Assistant UNLOCK holds open', 'UNLOCK', { lock: false, seconds: null }],
    ['Home Assistant OPEN uses the door default', 'OPEN', { lock: false, seconds: 'default' }],
    ['OPEN with a trailing newline', 'OPEN\n', { lock: false, seconds: 'default' }],
    ['LOCK with surrounding whitespace', '  LOCK \r\n', { lock: true }],
    ['JSON with surrounding whitespace', ' \n{"lock_state":false,"unlock_time":7}\n', { lock: false, seconds: 7 }],
  ];
  it.each(accepted)('%s', (_name, payload, action) => {
    const cmd = ok(parse(payload));
    expect(cmd.action).toEqual(action);
    expect(cmd.signed).toBe(false);
  });

  it('returns the request_id of an accepted command', () => {
    expect(ok(parse({ lock_state: true, request_id: 'r-1' })).requestId).toBe('r-1');
    expect(ok(parse('LOCK')).requestId).toBeNull();
  });

  const invalid: Array<[string, string | Buffer | object]> = [
    ['non-JSON text', 'please unlock'],
    ['lower-case lock is not a Home Assistant payload', 'lock'],
    ['truncated JSON', '{"lock_state":false'],
    ['empty payload', ''],
    ['JSON null', 'null'],
    ['a JSON array', [{ lock_state: false }]],
    ['a JSON number', '5'],
    ['an object without lock_state', { unlock_time: 5 }],
    ['lock_state as a string', { lock_state: 'false' }],
    ['lock_state as a number', { lock_state: 0 }],
    ['unlock_time as a string', { lock_state: false, unlock_time: '5' }],
    ['unlock_time null', { lock_state: false, unlock_time: null }],
    ['unlock_time negative', { lock_state: false, unlock_time: -5 }],
    ['unlock_time zero', { lock_state: false, unlock_time: 0 }],
    ['unlock_time fractional', { lock_state: false, unlock_time: 1.5 }],
    ['unlock_time 10^12', { lock_state: false, unlock_time: 1e12 }],
    ['unlock_time 604801 (over 7 days)', { lock_state: false, unlock_time: 604_801 }],
    ['a uuid of another door', { lock_state: false, unlock_time: 5, uuid: OTHER_DOOR }],
    ['an empty uuid', { lock_state: true, uuid: '' }],
    ['unlock_time together with lock_state true', { lock_state: true, unlock_time: 5 }],
    ['a 1 MB payload', Buffer.from(JSON.stringify({ lock_state: false, pad: 'x'.repeat(1024 * 1024) }))],
    ['a valid command padded to just over 16 KiB', Buffer.from('{"lock_state":true}'.padEnd(MAX_COMMAND_BYTES + 1, ' '))],
  ];
  it.each(invalid)('400 for %s', (_name, payload) => {
    const e = err(parse(payload));
    expect(e.status).toBe(400);
    expect(e.error.length).toBeGreaterThan(0);
  });

  it('names the offending field in the error', () => {
    expect(err(parse({ lock_state: false, unlock_time: 0 })).error).toMatch(/unlock_time/);
    expect(err(parse({ lock_state: 'false' })).error).toMatch(/lock_state/);
  });

  it('accepts a payload of exactly 16 KiB (the limit is inclusive)', () => {
    const head = '{"lock_state":true}';
    const buf = Buffer.from(head + ' '.repeat(MAX_COMMAND_BYTES - head.length));
    expect(buf.length).toBe(MAX_COMMAND_BYTES);
    expect(ok(parse(buf)).action).toEqual({ lock: true });
  });

  it('echoes the request_id in errors when the payload carries one', () => {
    expect(err(parse({ lock_state: false, unlock_time: -1, request_id: 'abc' })).requestId).toBe('abc');
    expect(err(parse({ lock_state: 'x', request_id: 'bad-types' })).requestId).toBe('bad-types');
    expect(err(parse({ lock_state: true, uuid: OTHER_DOOR, request_id: 'wrong-door' })).requestId).toBe('wrong-door');
    expect(err(parse({ lock_state: true, unlock_time: 5, request_id: 'r9' })).requestId).toBe('r9');
  });

  it('has no request_id in errors when none could be read', () => {
    expect(err(parse('garbage')).requestId).toBeNull();
    expect(err(parse({ lock_state: 'x' })).requestId).toBeNull();
    expect(err(parse({ lock_state: 'x', request_id: 42 })).requestId).toBeNull();
  });
});

interface SignedFields {
  uuid: string;
  lock_state: boolean;
  unlock_time?: number;
  request_id: string;
  issued_at: number;
}

/** The signature as a service would compute it from docs/mqtt.md, independently of src. */
function independentSignature(secret: string, f: SignedFields): string {
  const text = `${f.uuid}\n${f.lock_state}\n${f.unlock_time ?? ''}\n${f.request_id}\n${f.issued_at}`;
  return createHmac('sha256', secret).update(text, 'utf8').digest('hex');
}

function signedPayload(f: SignedFields, signature = independentSignature(SECRET, f)): object {
  const { uuid: _uuid, ...body } = f;
  return { ...body, signature };
}

const signedCtx = { secret: SECRET, maxAgeSeconds: 30 };
const base: SignedFields = { uuid: DOOR, lock_state: false, unlock_time: 5, request_id: 'req-0001', issued_at: NOW - 2 };

describe('signed commands: format', () => {
  it('sign(secret, signedString(...)) equals an HMAC-SHA256 over the documented string', () => {
    const fromSrc = sign(SECRET, signedString({ uuid: DOOR, lockState: false, unlockTime: 5, requestId: 'req-0001', issuedAt: NOW - 2 }));
    expect(fromSrc).toBe(independentSignature(SECRET, base));
    expect(fromSrc).toMatch(/^[0-9a-f]{64}$/);
  });

  it('signedString leaves the unlock_time line empty when there is none', () => {
    expect(signedString({ uuid: DOOR, lockState: true, unlockTime: undefined, requestId: 'r', issuedAt: 12 })).toBe(`${DOOR}\ntrue\n\nr\n12`);
  });
});

describe('parseCommand, signed (command secret set)', () => {
  it('accepts a correctly signed timed unlock', () => {
    const cmd = ok(parse(signedPayload(base), signedCtx));
    expect(cmd).toEqual({ action: { lock: false, seconds: 5 }, requestId: 'req-0001', signed: true, issuedAt: NOW - 2 });
  });

  it('accepts a signature made with the exported sign()', () => {
    const f: SignedFields = { uuid: DOOR, lock_state: true, request_id: 'lock-7', issued_at: NOW };
    const signature = sign(SECRET, signedString({ uuid: DOOR, lockState: true, unlockTime: undefined, requestId: 'lock-7', issuedAt: NOW }));
    expect(ok(parse(signedPayload(f, signature), signedCtx)).action).toEqual({ lock: true });
  });

  it('accepts a signed hold-open, a matching uuid field and upper-case hex', () => {
    const f: SignedFields = { uuid: DOOR, lock_state: false, request_id: 'hold-1', issued_at: NOW };
    const payload = { ...signedPayload(f, independentSignature(SECRET, f).toUpperCase()), uuid: DOOR };
    expect(ok(parse(payload, signedCtx)).action).toEqual({ lock: false, seconds: null });
  });

  it('accepts commands exactly 30 s old and 30 s in the future', () => {
    for (const issued_at of [NOW - 30, NOW + 30]) {
      expect(ok(parse(signedPayload({ ...base, issued_at }), signedCtx)).signed).toBe(true);
    }
  });

  it.each(['LOCK', 'UNLOCK', 'OPEN'])('401 for a plain %s', (plain) => {
    expect(err(parse(plain, signedCtx)).status).toBe(401);
  });

  it('401 for unsigned JSON', () => {
    expect(err(parse({ lock_state: false, unlock_time: 5 }, signedCtx)).status).toBe(401);
  });

  it.each(['signature', 'request_id', 'issued_at'] as const)('401 when %s is missing', (field) => {
    const payload: Record<string, unknown> = { ...signedPayload(base) };
    delete payload[field];
    expect(err(parse(payload, signedCtx)).status).toBe(401);
  });

  const flipHexDigit = (hex: string, i: number) => hex.slice(0, i) + (hex[i] === '0' ? '1' : '0') + hex.slice(i + 1);

  const forged: Array<[string, () => object]> = [
    ['one hex digit changed (first)', () => signedPayload(base, flipHexDigit(independentSignature(SECRET, base), 0))],
    ['one hex digit changed (last)', () => signedPayload(base, flipHexDigit(independentSignature(SECRET, base), 63))],
    ['signed over another unlock_time', () => ({ ...signedPayload(base, independentSignature(SECRET, { ...base, unlock_time: 6 })) })],
    ['signed as a hold-open, sent as timed unlock', () => signedPayload(base, independentSignature(SECRET, { ...base, unlock_time: undefined }))],
    ['signed as lock, sent as unlock', () => signedPayload(base, independentSignature(SECRET, { ...base, lock_state: true, unlock_time: undefined }))],
    ["signed for another door's uuid", () => signedPayload(base, independentSignature(SECRET, { ...base, uuid: OTHER_DOOR }))],
    ['signed with another request_id', () => signedPayload(base, independentSignature(SECRET, { ...base, request_id: 'req-0002' }))],
    ['signed with another issued_at', () => signedPayload(base, independentSignature(SECRET, { ...base, issued_at: NOW - 1 }))],
    ['signed with another secret', () => signedPayload(base, independentSignature('not the secret', base))],
  ];
  it.each(forged)('401 for a signature %s', (_name, build) => {
    const e = err(parse(build(), signedCtx));
    expect(e.status).toBe(401);
    expect(e.requestId).toBe('req-0001');
  });

  it('401 when the command names another door than the topic it came on', () => {
    // Signed correctly for OTHER_DOOR, but published on DOOR's topic.
    const f = { ...base, uuid: OTHER_DOOR };
    expect(err(parse(signedPayload(f), signedCtx)).status).toBe(401);
  });

  it.each([
    ['31 s old', NOW - 31],
    ['an hour old', NOW - 3600],
    ['31 s in the future', NOW + 31],
    ['in milliseconds instead of seconds', NOW * 1000],
  ])('409 for a correctly signed command issued %s', (_name, issued_at) => {
    const e = err(parse(signedPayload({ ...base, issued_at }), signedCtx));
    expect(e.status).toBe(409);
    expect(e.requestId).toBe('req-0001');
  });

  it('409 for a request_id already executed, and asks the replay cache about that id', () => {
    const asked: string[] = [];
    const e = err(parse(signedPayload(base), { ...signedCtx, seen: (id) => (asked.push(id), id === 'req-0001') }));
    expect(e.status).toBe(409);
    expect(asked).toEqual(['req-0001']);
  });

  it('checks the signature before staleness and replay: a forged old or replayed command is 401', () => {
    const old = { ...base, issued_at: NOW - 3600 };
    const asked: string[] = [];
    const seen = (id: string) => (asked.push(id), true);
    expect(err(parse(signedPayload(old, flipHexDigit(independentSignature(SECRET, old), 10)), { ...signedCtx, seen })).status).toBe(401);
    expect(err(parse(signedPayload(base, flipHexDigit(independentSignature(SECRET, base), 10)), { ...signedCtx, seen })).status).toBe(401);
    expect(asked).toEqual([]);
  });

  it('still rejects invalid content with 400 in signed mode', () => {
    const f = { ...base, unlock_time: 0 };
    expect(err(parse(signedPayload(f), signedCtx)).status).toBe(400);
    expect(err(parse('not json', signedCtx)).status).toBe(400);
    expect(err(parse({ ...signedPayload(base), signature: 'abc' }, signedCtx)).status).toBe(400);
  });
});

describe("parseCommand, Home Assistant's lock with a code (its command template)", () => {
  it('takes {"action","code"} as the plain word it names, with the code typed (null: none)', () => {
    expect(ok(parse({ action: 'UNLOCK', code: '4711' }))).toEqual({
      action: { lock: false, seconds: null },
      requestId: null,
      signed: false,
      homeAssistant: { code: '4711' },
    });
    expect(ok(parse({ action: 'OPEN', code: null })).action).toEqual({ lock: false, seconds: 'default' });
    expect(ok(parse({ action: 'LOCK' })).homeAssistant).toEqual({ code: null });
    // The plain words are Home Assistant's too, without a code.
    expect(ok(parse('UNLOCK')).homeAssistant).toEqual({ code: null });
    // The JSON commands are not: the code never applies to them.
    expect(ok(parse({ lock_state: false })).homeAssistant).toBeUndefined();
  });

  it('400 for an unknown action, a code that is not text, or another field; the error never echoes the code', () => {
    for (const body of [
      { action: 'unlock', code: '4711' },
      { action: 'UNLOCK', code: 4711 },
      { action: 'UNLOCK', code: '4711', lock_state: false },
    ]) {
      const e = err(parse(body));
      expect(e.status, JSON.stringify(body)).toBe(400);
      expect(e.error).not.toContain('4711');
    }
  });

  it('401 in signed mode: Home Assistant cannot sign', () => {
    expect(err(parse({ action: 'UNLOCK', code: '4711' }, { secret: SECRET }))).toMatchObject({ status: 401 });
  });
});
