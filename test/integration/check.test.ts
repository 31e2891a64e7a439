import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { exampleSnapshot, writeSnapshot } from '../support/snapshot.js';

const tmp = tempDir();
afterAll(tmp.cleanup);

let config: string;
let twoDoorConfig: string;

// Berlin time: 2026-11-23 is a Monday, 2026-11-22 a Sunday. Carol's guest link (id 501): door 12 only,
// 2026-01-01 to 2027-01-01 UTC, Monday-Friday 9-17.
const MONDAY_10 = '2026-11-23T10:00:00+01:00';

beforeAll(() => {
  const one = join(tmp.path, 'one');
  const two = join(tmp.path, 'two');
  mkdirSync(one);
  mkdirSync(two);
  config = writeConfig(one);
  twoDoorConfig = writeConfig(two, { twoDoors: true });
  const snapshot = exampleSnapshot();
  snapshot.guest_links!.push({
    magic_link_id: 'future',
    magic_token: 'future-token-000000001',
    name: 'Next year',
    email_list: [],
    resource_id_list: [12],
    start_time: '2027-01-01 00:00:00',
    end_time: null,
    smartcards: [{ number: '8800001', label: 'future' }],
  });
  const file = writeSnapshot(tmp.path, 'snapshot.json', snapshot);
  for (const c of [config, twoDoorConfig]) expect(runCli(['import', file, '--config', c]).status).toBe(0);
});

function check(args: string[], cfg = config) {
  const r = runCli(['check', ...args, '--config', cfg]);
  const out = r.stdout ? (JSON.parse(r.stdout) as Record<string, unknown>) : null;
  return { ...r, out };
}

describe('door-agent check: every rule of the access decision (docs/architecture.md)', () => {
  it.each([
    ['an active Staff user (leading zeros dropped)', ['0004213578'], true, null, [{ email_id: 101, granted: true, reason: null }]],
    ['a user holding an allowed policy', ['4213581'], true, null, [{ email_id: 105, granted: true, reason: null }]],
    ['a PIN (kind pin shares the card table)', ['1234', '--kind', 'pin'], true, null, [{ email_id: 101, granted: true, reason: null }]],
    ['an unknown card', ['99999999'], false, 'unknown_credential', []],
    ['a suspended user', ['4213579'], false, 'user_suspended', [{ email_id: 102, granted: false, reason: 'user_suspended' }]],
    ['a user outside the allowed groups', ['4213580'], false, 'not_authorized', [{ email_id: 104, granted: false, reason: 'not_authorized' }]],
    [
      'a guest card inside its schedule',
      ['7700001', '--at', MONDAY_10],
      true,
      null,
      [
        { magic_link_id: '501', granted: true, reason: null },
        { email_id: 103, granted: false, reason: 'not_authorized' },
      ],
    ],
    [
      'a guest token inside its schedule',
      ['guest-token-carol-0001', '--kind', 'token', '--at', '2026-11-27T16:59:59+01:00'],
      true,
      null,
      [{ magic_link_id: '501', granted: true, reason: null }],
    ],
    [
      'a guest token at the end hour (exclusive)',
      ['guest-token-carol-0001', '--kind', 'token', '--at', '2026-11-27T17:00:00+01:00'],
      false,
      'outside_schedule',
      [{ magic_link_id: '501', granted: false, reason: 'outside_schedule' }],
    ],
    [
      'a guest token on Sunday',
      ['guest-token-carol-0001', '--kind', 'token', '--at', '2026-11-22T10:00:00+01:00'],
      false,
      'outside_schedule',
      [{ magic_link_id: '501', granted: false, reason: 'outside_schedule' }],
    ],
    [
      'a guest token after the link expired',
      ['guest-token-carol-0001', '--kind', 'token', '--at', '2027-01-04T10:00:00+01:00'],
      false,
      'link_expired',
      [{ magic_link_id: '501', granted: false, reason: 'link_expired' }],
    ],
    [
      'a card of a link not yet valid',
      ['8800001', '--at', MONDAY_10],
      false,
      'link_not_yet_valid',
      [{ magic_link_id: 'future', granted: false, reason: 'link_not_yet_valid' }],
    ],
    [
      'a guest token while the clock is untrusted (before 2024)',
      ['guest-token-carol-0001', '--kind', 'token', '--at', '2019-06-03T10:00:00Z'],
      false,
      'clock_untrusted',
      [{ magic_link_id: '501', granted: false, reason: 'clock_untrusted' }],
    ],
    [
      'a Staff card while the clock is untrusted (not time-bound)',
      ['4213578', '--at', '1970-01-02T00:00:00Z'],
      true,
      null,
      [{ email_id: 101, granted: true, reason: null }],
    ],
    ['an unknown token', ['no-such-token-at-all', '--kind', 'token'], false, 'unknown_credential', []],
  ] as const)('%s', (_name, args, granted, reason, holders) => {
    const r = check([...args]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(granted ? 0 : 1);
    expect(r.out).toMatchObject({ granted, reason, door: DOOR_UUID, holders });
  });

  it('wrong_door: a guest link for door 12 presented at door 13', () => {
    const r = check(['guest-token-carol-0001', '--kind', 'token', '--door', SECOND_DOOR_UUID, '--at', MONDAY_10], twoDoorConfig);
    expect(r.status).toBe(1);
    expect(r.out).toMatchObject({ granted: false, reason: 'wrong_door', door: SECOND_DOOR_UUID });
    // Staff may use every door of this agent.
    expect(check(['4213578', '--door', SECOND_DOOR_UUID], twoDoorConfig).status).toBe(0);
  });

  it('never prints a whole card number; the hint shows the last digits', () => {
    const r = check(['0004213578']);
    expect(r.stdout).not.toContain('4213578');
    expect(r.out?.hint).toBe('…78');
  });
});

describe('door-agent check: usage errors (exit 2)', () => {
  it('a card with spaces or letters, without echoing it', () => {
    for (const bad of ['4213 578', '42135x8', '']) {
      const r = runCli(['check', bad, '--config', config]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('the card given is malformed: expected digits only');
      if (bad) expect(r.stderr).not.toContain(bad);
    }
  });

  it('a malformed PIN or token', () => {
    expect(runCli(['check', '12#4', '--kind', 'pin', '--config', config]).stderr).toContain('the pin given is malformed');
    expect(runCli(['check', 'short', '--kind', 'token', '--config', config]).status).toBe(2);
  });

  it('an unknown kind, a bad --at, an unknown door, and a missing --door with two doors', () => {
    let r = runCli(['check', '1', '--kind', 'face', '--config', config]);
    expect([r.status, r.stderr]).toEqual([2, expect.stringContaining('--kind must be card, pin or token')]);
    r = runCli(['check', '1', '--at', 'tomorrow', '--config', config]);
    expect([r.status, r.stderr]).toEqual([
      2,
      expect.stringContaining('--at "tomorrow" is neither a local time such as "2026-12-24 19:00" (agent.timezone) nor an ISO 8601 instant'),
    ]);
    r = runCli(['check', '1', '--at', '2026-11-23T10:00:00', '--config', config]);
    expect(r.status).toBe(2);
    r = runCli(['check', '1', '--at', '2026-02-30T10:00:00Z', '--config', config]); // no rollover into March
    expect([r.status, r.stderr]).toEqual([2, expect.stringContaining('is neither a local time')]);
    r = runCli(['check', '1', '--at', '2026-02-30 10:00', '--config', config]);
    expect([r.status, r.stderr]).toEqual([2, expect.stringContaining('is not a time that exists in Europe/Berlin')]);
    r = runCli(['check', '1', '--door', SECOND_DOOR_UUID, '--config', config]);
    expect([r.status, r.stderr]).toEqual([2, expect.stringContaining('is not a configured door')]);
    r = runCli(['check', '1', '--config', twoDoorConfig]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('2 doors are configured: name one with --door UUID');
    expect(r.stderr).toContain(`${SECOND_DOOR_UUID}  13  Back door`);
  });

  it('no cache yet: tells the operator to import or sync', () => {
    const empty = join(tmp.path, 'empty');
    mkdirSync(empty);
    const r = runCli(['check', '4213578', '--config', writeConfig(empty)]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('provision it with door-agent import first');
  });

  it('a cache with damaged pages: refused with what to do, not a raw SQLite message', () => {
    const damaged = join(tmp.path, 'damaged');
    mkdirSync(damaged);
    const cfg = writeConfig(damaged);
    expect(runCli(['import', 'examples/snapshot.json', '--config', cfg]).status).toBe(0);
    // Everything after the first page (the header) overwritten, as a failing SD card might.
    const file = join(damaged, 'data/cache.db');
    const bytes = readFileSync(file);
    const pageSize = bytes.readUInt16BE(16);
    bytes.fill(0x5a, pageSize);
    writeFileSync(file, bytes);
    const r = runCli(['check', '4213578', '--config', cfg]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('the cache is damaged (database disk image is malformed); the door stays locked. Rebuild the cache');
  });
});

describe('door-agent check: a card as printed (facility:card) on a door with a Wiegand reader', () => {
  // 123:45678 as an H10301 card reads as 123 * 65536 + 45678 = 8106606 under numbering data.
  function site(name: string, cards: Array<[holder: string, number: string]>, reader = 'format: H10301') {
    const dir = join(tmp.path, name);
    mkdirSync(dir);
    const cfg = writeConfig(dir, { doorExtra: `    reader: { type: wiegand, d0: 5, d1: 6, ${reader} }\n` });
    const snapshot = exampleSnapshot();
    for (const [holder, number] of cards) (snapshot.details[holder] as { smartcards: unknown[] }).smartcards.push({ number, label: 'badge' });
    expect(runCli(['import', writeSnapshot(dir, 'snapshot.json', snapshot), '--config', cfg]).status).toBe(0);
    return cfg;
  }

  it('says which form of the card the directory holds: matched number or printed; none for nobody', () => {
    const printed = site('printed', [['101', '123:45678']]);
    expect(check(['0123:045678'], printed).out).toMatchObject({ granted: true, matched: 'printed', hint: '123:…', holders: [{ email_id: 101 }] });
    expect(check(['8106606'], printed).out).toMatchObject({ granted: false, reason: 'unknown_credential', matched: null });
    const numbered = site('numbered', [['101', '8106606']]);
    expect(check(['123:45678'], numbered).out).toMatchObject({ granted: true, matched: 'number', holders: [{ email_id: 101 }] });
    expect(check(['8106606'], numbered).out).toMatchObject({ granted: true, matched: 'number' });
    expect(check(['1234', '--kind', 'pin'], numbered).out).not.toHaveProperty('matched');
  });

  it('the number and the printed form held by different users: denied card_ambiguous, as at the door', () => {
    const both = site('both', [
      ['101', '123:45678'],
      ['105', '8106606'],
    ]);
    const r = check(['123:45678'], both);
    expect(r.status).toBe(1);
    expect(r.out).toMatchObject({ granted: false, reason: 'card_ambiguous', holders: [], matched: null });
    expect(r.stdout).not.toMatch(/45678|8106606/);
  });

  it('a reader on auto reads 123:45678 as different numbers (H10301, C1k35, ...): decided alike it answers, else it asks for the number', () => {
    const auto = site('auto', [['101', '123:45678']], 'format: auto');
    expect(check(['123:45678'], auto).out).toMatchObject({ granted: true, matched: 'printed' });
    const split = site('split', [['105', '8106606']], 'format: auto');
    const r = check(['123:45678'], split);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("reads as 4 different numbers on Front door's reader");
    expect(r.stderr).toContain("give the card's format with --format (H10301, ");
    expect(r.stderr).toContain('door-agent reader learn');
    // Its format named: decided as that format reads it (H10301 reads 123:45678 as 8106606, Dave's), any case.
    const h10301 = check(['123:45678', '--format', 'h10301'], split);
    expect(h10301.status).toBe(0);
    expect(h10301.out).toMatchObject({ granted: true, matched: 'number', format: 'H10301', holders: [{ email_id: 105 }] });
    // As a 35-bit Corporate 1000 the same printed card is another number, nobody's.
    expect(check(['123:45678', '--format', 'C1k35'], split).out).toMatchObject({ granted: false, reason: 'unknown_credential', format: 'C1k35' });
    // 26 stands for H10301, as in a reader's format:.
    expect(check(['123:45678', '--format', '26'], split).out).toMatchObject({ matched: 'number', format: 'H10301', holders: [{ email_id: 105 }] });
    // Facility 300 does not fit H10301's 8 bits: no number, so no answer that would only be the printed form's.
    const unfit = check(['300:45678', '--format', 'H10301'], split);
    expect(unfit.status).toBe(2);
    expect(unfit.stderr).toContain("--format H10301: the card given as printed reads as no number in H10301 on Front door's reader");
    expect(unfit.stderr).not.toContain('45678');
  });

  it("--format: only for a card given as printed, and only one of the reader's formats; a clear error otherwise", () => {
    const h10301 = site('h10301', [['101', '8106606']], 'format: H10301');
    const wrong = check(['123:45678', '--format', 'C1k35'], h10301);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain(`--format "C1k35" is not a format the reader takes; Front door's reader takes H10301`);
    const number = check(['8106606', '--format', 'H10301'], h10301);
    expect(number.status).toBe(2);
    expect(number.stderr).toContain('--format applies to a card given as printed (facility:card, e.g. 123:45678)');
    expect(number.stderr).not.toContain('8106606');
    const serialDir = join(tmp.path, 'serial-format');
    mkdirSync(serialDir);
    const serial = writeConfig(serialDir, { doorExtra: `    reader: { path: ${serialDir}/reader }\n` });
    const noFormats = check(['123:45678', '--format', 'H10301'], serial);
    expect(noFormats.status).toBe(2);
    expect(noFormats.stderr).toContain("--format: Front door's reader (serial) takes no Wiegand formats; a printed card is looked up as printed");
  });
});
