import { describe, expect, it } from 'vitest';
import { encodeCard } from '../../src/core/wiegand.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { CMD, describeNak } from '../../src/readers/osdp/codes.js';
import { decodeComSettings, encodeComSettings, newAddressProblem, newBaudProblem } from '../../src/readers/osdp/comset.js';
import { OsdpBus } from '../../src/readers/osdp/controlPanel.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { encodeText, hasTextOutput, textCommand, textProblem } from '../../src/readers/osdp/textOutput.js';
import { ManualTime } from '../support/manualTime.js';

describe('osdp_COMSET / osdp_COM data', () => {
  it('address, then the baud rate in 4 bytes LSB first; an osdp_COM of another length is no answer', () => {
    expect([...encodeComSettings({ address: 5, baudRate: 19200 })]).toEqual([5, 0x00, 0x4b, 0x00, 0x00]);
    expect([...encodeComSettings({ address: 126, baudRate: 230400 })]).toEqual([126, 0x00, 0x84, 0x03, 0x00]);
    expect(decodeComSettings(Buffer.from([5, 0x00, 0xe1, 0x01, 0x00]))).toEqual({ address: 5, baudRate: 123_136 });
    expect(decodeComSettings(Buffer.from([5, 0x80, 0x25, 0x00, 0x00]))).toEqual({ address: 5, baudRate: 9600 });
    expect(decodeComSettings(Buffer.from([5, 0x80, 0x25, 0x00]))).toBeNull();
  });

  it('the new address: 0-126, not broadcast, not the one it has, not one another reader on the bus has (named)', () => {
    const taken = new Map([[4, "Back door's doors[1].reader"]]);
    expect(newAddressProblem(5, 3, taken)).toBeNull();
    expect(newAddressProblem(0, 3, taken)).toBeNull();
    expect(newAddressProblem(127, 3, taken)).toBe('an OSDP address is 0 to 126 (127, 0x7F, is the broadcast address every reader answers)');
    expect(newAddressProblem(200, 3, taken)).toBe('an OSDP address is 0 to 126');
    expect(newAddressProblem(3, 3, taken)).toBe('the reader is at address 3 already');
    expect(newAddressProblem(4, 3, taken)).toBe("address 4 on this bus is already Back door's doors[1].reader");
  });

  it('the new baud rate: one OSDP uses, not the one it has', () => {
    expect(newBaudProblem(115200, 9600)).toBeNull();
    expect(newBaudProblem(14400, 9600)).toBe('the baud rate is one of 9600, 19200, 38400, 57600, 115200, 230400');
    expect(newBaudProblem(9600, 9600)).toBe('the reader runs at 9600 already');
  });

  it("a NAK's code is named as the standard names it", () => {
    expect(describeNak(Buffer.from([3]))).toBe('NAK 3: unknown command (the reader does not implement it)');
    expect(describeNak(Buffer.from([0x42]))).toBe('NAK 66: a code the standard does not define');
    expect(describeNak(Buffer.alloc(0))).toBe('NAK without an error code');
  });
});

describe('osdp_TEXT', () => {
  it('reader 0, temporary wrapped text (4), its seconds, row 1, column 1, the length, the text', () => {
    expect([...encodeText('Hi!', 3)]).toEqual([0, 4, 3, 1, 1, 3, 0x48, 0x69, 0x21]);
  });

  it('granted for a grant, denied for every refusal, nothing where the site gave no text', () => {
    const text = { granted: 'Welcome', denied: 'No entry', seconds: 2 };
    expect(textCommand('grant', text)?.data.subarray(6).toString()).toBe('Welcome');
    for (const kind of ['deny', 'lockedOut', 'lockdown'] as const) expect(textCommand(kind, text)?.data.subarray(6).toString()).toBe('No entry');
    expect(textCommand('awaiting', text)).toBeNull();
    expect(textCommand('grant', { denied: 'No entry', seconds: 2 })).toBeNull();
    expect(textCommand('grant', undefined)).toBeNull();
    expect(textCommand('grant', text)?.code).toBe(CMD.TEXT);
  });

  it('a text is printable ASCII, 32 characters at most, and the problem says why', () => {
    expect(textProblem('Welcome, Alice ~ door 3')).toBeNull();
    expect(textProblem('x'.repeat(32))).toBeNull();
    expect(textProblem('x'.repeat(33))).toBe("at most 32 characters (the most one osdp_TEXT carries to a reader's display); this has 33");
    expect(textProblem('Grüß Gott')).toBe('printable ASCII only (a reader\'s display has no other characters): "ü" is not');
    expect(textProblem('line\none')).toBe('printable ASCII only (a reader\'s display has no other characters): "\\n" is not');
  });

  it('osdp_PDCAP: text output is function code 6, with a compliance level and at least one display', () => {
    expect(hasTextOutput(Buffer.from([3, 1, 0, 4, 1, 1, 5, 1, 1, 6, 1, 1, 8, 1, 0]))).toBe(true);
    expect(hasTextOutput(Buffer.from([3, 1, 0, 4, 1, 1, 5, 1, 1, 8, 1, 0]))).toBe(false);
    expect(hasTextOutput(Buffer.from([6, 0, 1]))).toBe(false);
    expect(hasTextOutput(Buffer.from([6, 1, 0]))).toBe(false);
  });
});

describe('osdp_TEXT on the bus', () => {
  function bus(display: boolean) {
    const time = new ManualTime();
    const frames: ReaderFrame[] = [];
    const refused: string[] = [];
    const capabilities: boolean[] = [];
    let panel: OsdpBus | null = null;
    const pd = new OsdpEmulator([0], (bytes) => panel!.receive(bytes));
    pd.reader(0).display = display;
    panel = new OsdpBus({
      transport: { write: (bytes) => pd.receive(bytes) },
      clock: time,
      timers: time,
      readers: [
        {
          address: 0,
          numbering: 'data',
          onFrame: (f) => frames.push(f),
          onTextRefused: (reason) => refused.push(reason),
          onCapabilities: (c) => capabilities.push(c.textOutput),
        },
      ],
    });
    panel.start();
    time.advance(50);
    return { time, panel, pd, frames, refused, capabilities };
  }

  it("the reader's capabilities say whether it has a display", () => {
    const withDisplay = bus(true);
    expect(withDisplay.capabilities).toEqual([true]);
    expect(withDisplay.panel.hasTextOutput(0)).toBe(true);
    const without = bus(false);
    expect(without.capabilities).toEqual([false]);
    expect(without.panel.hasTextOutput(0)).toBe(false);
  });

  it('a text the reader refuses (NAK) is reported with its reason; the LED before it and the polls after it go on', () => {
    const t = bus(false);
    t.panel.send(0, CMD.LED, Buffer.alloc(14));
    t.panel.send(0, CMD.TEXT, encodeText('Welcome', 3));
    t.time.advance(20);
    expect(t.refused).toEqual(['NAK 3: unknown command (the reader does not implement it)']);
    t.pd.presentCard(0, encodeCard(4_213_578n, 'H10301'));
    t.time.advance(20);
    expect(t.frames).toMatchObject([{ kind: 'card', value: '4213578', printed: '64:19274' }]);
    const received = t.pd.reader(0).received;
    expect(received.indexOf(CMD.LED)).toBeLessThan(received.indexOf(CMD.TEXT));
    expect(received.lastIndexOf(CMD.POLL)).toBeGreaterThan(received.indexOf(CMD.TEXT));
  });
});
