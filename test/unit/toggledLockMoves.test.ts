import { describe, expect, it } from 'vitest';
import { toggledLockInput } from '../../src/core/toggledLockMoves.js';

describe('which toggled input made a lock move (its flood guard), from the cause', () => {
  it.each([
    ['emergency release', null, 'emergency input'],
    ['emergency cleared', 'emergency release', 'emergency input'],
    ['exit button', null, 'exit button'],
    ['timer', 'exit button', 'exit button'], // the relock timer ends the exit button's unlock
    ['door closed', 'exit button', 'contact'],
    ['door closed', 'card …78', 'contact'],
  ])('%s (ending %s): %s', (cause, ended, input) => {
    expect(toggledLockInput(cause, ended)).toBe(input);
  });

  it.each([
    ['card …78', null], // a credential's unlock follows a recorded decision
    ['timer', 'card …78'],
    ['remote command (operator)', null],
    ['timer', 'remote command (operator)'],
    ['unlock schedule', null],
    ['unlock schedule ended', 'unlock schedule'],
    ['lockdown', 'card …78'],
    ['resumed after restart', null],
    ['timer', 'resumed after restart'],
  ])('%s (ending %s): recorded one by one', (cause, ended) => {
    expect(toggledLockInput(cause, ended)).toBeNull();
  });
});
