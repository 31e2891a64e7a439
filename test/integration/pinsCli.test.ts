import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KeypadGuesses } from '../../src/door/keypadGuesses.js';
import { openStateDatabase, statePath } from '../../src/store/database.js';
import { writeKeypadGuesses } from '../../src/store/keypadGuessState.js';
import { runCli, tempDir, writeConfig } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { exampleSnapshot, writeSnapshot } from '../support/snapshot.js';

const tmp = tempDir('door-agent-pins-cli-');
afterAll(tmp.cleanup);

// Erin (Night shift) has the PINs 0123 and 987 (3 digits), Dave 12 (2 digits).
const snapshot = (() => {
  const s = exampleSnapshot();
  const details = s.details as Record<string, { smartcards: Array<{ number: string; label: string }> }>;
  details['105']!.smartcards.push({ number: '0123', label: 'PIN' }, { number: '987', label: 'pin' });
  details['104']!.smartcards.push({ number: '12', label: 'PIN' });
  return writeSnapshot(tmp.path, 'pins.json', s);
})();

describe('PINs at the command line (issue 32)', () => {
  const dir = tempDir('door-agent-pins-');
  afterAll(dir.cleanup);
  const config = writeConfig(dir.path);

  it('import says how many PINs are too short to ever open; status counts them', () => {
    const imported = runCli(['import', snapshot, '--config', config]);
    expect(imported.status).toBe(0);
    expect(imported.stdout).toContain('WARNING: 2 PINs shorter than 4 digits are never accepted (access.minPinLength)');
    const status = runCli(['status', '--config', config]);
    expect(status.stdout).toContain('WARNING: 2 PINs shorter than 4 digits are never accepted');
    // Said once: the short PINs are among the directory's findings (one pass over the credentials), not also the keypad's.
    expect(status.stdout.split('PINs shorter than').length - 1).toBe(1);
    const check = runCli(['config', 'check', '--config', config]);
    expect(check.stdout).toContain('WARNING: 2 PINs shorter than 4 digits are never accepted');
    const json = JSON.parse(runCli(['status', '--json', '--config', config]).stdout) as { pins: { shortPins: number; minPinLength: number } };
    expect(json.pins).toMatchObject({ shortPins: 2, minPinLength: 4 });
  });

  it('check --kind pin: 0123 is not 123, and a PIN under the minimum is pin_too_short', () => {
    const check = (pin: string) =>
      JSON.parse(runCli(['check', pin, '--kind', 'pin', '--config', config]).stdout) as { granted: boolean; reason: string | null };
    expect(check('0123')).toMatchObject({ granted: true });
    expect(check('00123')).toMatchObject({ granted: false, reason: 'unknown_credential' });
    expect(check('123')).toMatchObject({ granted: false, reason: 'pin_too_short' });
    expect(check('987')).toMatchObject({ granted: false, reason: 'pin_too_short' });
  });
});

describe('status and the keypad lockout the daemon saved (issue 32)', () => {
  const dir = tempDir('door-agent-pins-lockout-');
  afterAll(dir.cleanup);
  const config = writeConfig(dir.path);

  /** Five wrong PINs `minutesAgo`, saved as the daemon saves them (KeypadGuesses, through state.db). */
  async function lockedOut(minutesAgo: number, times = 1): Promise<void> {
    const db = openStateDatabase(statePath(join(dir.path, 'data')));
    const time = new ManualTime({ wall: Date.now() - minutesAgo * 60_000, mono: 5_000 });
    const keypad = new KeypadGuesses({
      policy: { failures: 5, windowSeconds: 900, lockoutSeconds: 60, maxLockoutSeconds: 900 },
      clock: time,
      save: (state) => writeKeypadGuesses(db, state),
    });
    for (let lockout = 0; lockout < times; lockout++) {
      if (lockout > 0) time.advance(keypad.lockedUntil()! - time.monoNow());
      for (let i = 0; i < 5; i++) keypad.failed();
    }
    await Promise.resolve(); // the save runs after the decision, in a microtask
    db.close();
  }

  it('a lockout in progress says until when; one that has ended since the save says when it ended', async () => {
    expect(runCli(['import', snapshot, '--config', config]).status).toBe(0);
    await lockedOut(0);
    let status = runCli(['status', '--config', config]);
    expect(status.stdout).toMatch(/keypads: LOCKED OUT \(every door\) until \d{4}-\d\d-\d\dT[\d:.]+Z; 1 lockout in a row/);
    // Two lockouts in a row (60 s, then 120 s) ten minutes ago: the second ended 7 minutes ago.
    await lockedOut(10, 2);
    status = runCli(['status', '--config', config]);
    const ended = new Date(Date.now() - 10 * 60_000 + 180_000);
    const line = status.stdout.split('\n').find((l) => l.startsWith('keypads:'));
    expect(line).toMatch(/^keypads: not locked out \(the last lockout ended [\d:.TZ-]+\); 2 lockouts in a row$/);
    expect(Math.abs(Date.parse(line!.match(/ended ([^)]+)\)/)![1]!) - ended.getTime())).toBeLessThan(60_000);
    const json = JSON.parse(runCli(['status', '--json', '--config', config]).stdout) as { pins: { keypad: Record<string, unknown> } };
    expect(json.pins.keypad).toMatchObject({ lockedOut: false, streak: 2, lockoutEndsAt: line!.match(/ended ([^)]+)\)/)![1] });
  });
});

describe('configuration of the lockouts (issue 32)', () => {
  it('a door keypadLockout from before still loads; config check says it moved and which values hold', () => {
    const dir = tempDir('door-agent-pins-moved-');
    try {
      const config = writeConfig(dir.path, {
        access: '{ groups: [Staff], keypadLockout: { failures: 4 } }',
        doorExtra: '    keypadLockout: { failures: 3, windowSeconds: 120, lockoutSeconds: 30 }\n',
      });
      const r = runCli(['config', 'check', '--config', config]);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(
        'WARNING: doors[0].keypadLockout moved to access.keypadLockout (one wrong-PIN counter for all doors); the strictest values are used: ' +
          '3 failures in 120 s, lockout 30 s doubling up to 900 s',
      );
    } finally {
      dir.cleanup();
    }
  });

  it('a card lockout over 30 s is taken as 30 with a warning (the example used to say 60); a quiet period over 5 s is refused', () => {
    const dir = tempDir('door-agent-pins-card-');
    try {
      let config = writeConfig(dir.path, { doorExtra: '    cardLockout: { lockoutSeconds: 60 }\n' });
      let r = runCli(['config', 'check', '--config', config]);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain('WARNING: doors[0].cardLockout.lockoutSeconds 60 is taken as 30: a card lockout never keeps a valid card out longer');
      config = writeConfig(dir.path, { doorExtra: '    cardLockout: { quietSeconds: 10 }\n' });
      r = runCli(['config', 'check', '--config', config]);
      expect(r.status).toBe(78);
      expect(r.stderr).toContain('doors[0].cardLockout.quietSeconds');
      expect(r.stderr).toContain('at most 5: the next valid card after a stream of guesses must get in within 5 s');
    } finally {
      dir.cleanup();
    }
  });
});
