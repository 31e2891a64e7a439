import { describe, expect, it } from 'vitest';
import { portCloseReason } from '../../src/readers/serial/closeReason.js';

describe('portCloseReason', () => {
  it("says what libuv's text means at a door when the device went away", () => {
    const err = Object.assign(new Error('bad file descriptor'), { disconnected: true });
    expect(portCloseReason(err)).toBe('the device went away or reported an error (unplugged, powered off or reset: bad file descriptor)');
  });

  it('passes any other error on as it is, and names a close without one', () => {
    expect(portCloseReason(new Error('Input/output error'))).toBe('Input/output error');
    expect(portCloseReason(null)).toBe('the port closed');
    expect(portCloseReason(undefined)).toBe('the port closed');
  });
});
