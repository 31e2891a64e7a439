import { describe, expect, it } from 'vitest';
import { osdpChannelText, osdpChannelView } from '../../src/commands/osdpStatus.js';
import type { DoorOptions } from '../../src/door/options.js';
import type { RuntimeStatus } from '../../src/store/runtimeStatus.js';

const UUID = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const door = (reader: Partial<{ scbkFile: string; installMode: boolean }> = {}) =>
  ({
    uuid: UUID,
    reader: { type: 'osdp', path: '/dev/ttyUSB0', baudRate: 9600, address: 0, installMode: false, numbering: 'data', check: 'crc', ...reader },
  }) as unknown as DoorOptions;
const runtime = (channel?: string): RuntimeStatus => ({
  pid: 1,
  startedAt: '',
  stoppedAt: null,
  readers: { [UUID]: true },
  ...(channel ? { readerChannels: { [UUID]: channel } } : {}),
});

describe('status: the OSDP channel in use, not only the configured one', () => {
  it('a reader with a key whose handshake failed shows FAILED, configured secure', () => {
    const view = osdpChannelView(door({ scbkFile: '/k' }), runtime('failed'), true);
    expect(view).toEqual({ configured: 'secure', inUse: 'failed' });
    expect(osdpChannelText(view)).toContain('secure channel FAILED');
  });

  it('secure in use; pending before the daemon has reported; plain for a reader without a key', () => {
    expect(osdpChannelText(osdpChannelView(door({ scbkFile: '/k' }), runtime('secure'), true))).toBe('; secure channel in use');
    expect(osdpChannelView(door({ scbkFile: '/k' }), runtime(), true)).toEqual({ configured: 'secure', inUse: 'pending' });
    expect(osdpChannelText(osdpChannelView(door(), runtime(), true))).toContain(
      'PLAIN (no secure channel: a device on the bus can read and inject cards and PINs)',
    );
    expect(osdpChannelText(osdpChannelView(door({ installMode: true }), runtime('secure'), true))).toBe(
      '; secure channel in use (install mode: the public default key)',
    );
  });

  it('no daemon: only the configured channel; no OSDP reader: nothing', () => {
    const view = osdpChannelView(door({ scbkFile: '/k' }), runtime('secure'), false);
    expect(view).toEqual({ configured: 'secure', inUse: null });
    expect(osdpChannelText(view)).toBe('; channel configured secure');
    expect(osdpChannelView({ uuid: UUID } as DoorOptions, runtime(), true)).toBeUndefined();
  });

  it("a door's exit reader has its own channel, under <uuid>/exit; an older daemon's row (keyed by the door alone) still reads for the entry reader", () => {
    const osdp = { type: 'osdp', path: '/dev/ttyUSB0', baudRate: 9600, numbering: 'data', check: 'crc', installMode: false };
    const twoReaders = {
      uuid: UUID,
      reader: { ...osdp, address: 0, scbkFile: '/k' },
      exitReader: { ...osdp, address: 1, scbkFile: '/k-exit' },
    } as unknown as DoorOptions;
    const both = { ...runtime(), readerChannels: { [UUID]: 'secure', [`${UUID}/exit`]: 'failed' } };
    expect(osdpChannelView(twoReaders, both, true)).toEqual({ configured: 'secure', inUse: 'secure' });
    expect(osdpChannelView(twoReaders, both, true, 'exit')).toEqual({ configured: 'secure', inUse: 'failed' });
    // The row of a daemon from before exit readers reported a channel: only the entry reader's, under the door.
    const older = runtime('secure');
    expect(osdpChannelView(twoReaders, older, true)).toEqual({ configured: 'secure', inUse: 'secure' });
    expect(osdpChannelView(twoReaders, older, true, 'exit')).toEqual({ configured: 'secure', inUse: 'pending' });
    // A door without an exit reader has no exit channel.
    expect(osdpChannelView(door({ scbkFile: '/k' }), both, true, 'exit')).toBeUndefined();
  });
});
