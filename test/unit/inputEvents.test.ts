import { describe, expect, it } from 'vitest';
import { EV_KEY, KeyboardDecoder, encodeInputEvent, inputEventBytes } from '../../src/readers/keyboard/inputEvents.js';

// Key records as a HID reader produces them, in both kernel layouts; plain Buffers in, typed bytes out.
const EV_SYN = 0;
const EV_MSC = 4;
const KEY = { '0': 11, '1': 2, '2': 3, '4': 5, '7': 8, '8': 9, '5': 6, a: 30, b: 48, c: 46, enter: 28, kpenter: 96, kp3: 81, shift: 42, f1: 59 } as const;

function typed(keys: Array<keyof typeof KEY | [keyof typeof KEY, number]>, size: 16 | 24 = 24): Buffer {
  return Buffer.concat(
    keys.flatMap((k) => {
      const [name, value] = Array.isArray(k) ? k : [k, -1];
      const code = KEY[name];
      if (value >= 0) return [encodeInputEvent(EV_KEY, code, value, size)];
      // A press and a release, each with the scan code and a SYN_REPORT, as the kernel writes them.
      return [
        encodeInputEvent(EV_MSC, 4, 0x7001e, size),
        encodeInputEvent(EV_KEY, code, 1, size),
        encodeInputEvent(EV_SYN, 0, 0, size),
        encodeInputEvent(EV_KEY, code, 0, size),
        encodeInputEvent(EV_SYN, 0, 0, size),
      ];
    }),
  );
}

describe('keyboard reader records', () => {
  it('the record size follows the kernel: 24 bytes on 64-bit, 16 on 32-bit Raspberry Pi OS', () => {
    expect(inputEventBytes('arm64')).toBe(24);
    expect(inputEventBytes('x64')).toBe(24);
    expect(inputEventBytes('arm')).toBe(16);
  });

  it('a card typed and Enter: the digits and a CR, in either layout', () => {
    for (const size of [16, 24] as const) {
      const bytes = new KeyboardDecoder(size).push(typed(['4', '2', '1', '5', '7', '8', 'enter'], size));
      expect(bytes.toString('latin1')).toBe('421578\r');
    }
  });

  it('the numeric keypad and its Enter type the same digits', () => {
    expect(new KeyboardDecoder(24).push(typed(['kp3', 'kp3', 'kpenter'])).toString('latin1')).toBe('33\r');
  });

  it('shift gives capitals (hex cards, QR tokens); autorepeat is ignored', () => {
    const decoder = new KeyboardDecoder(24);
    const bytes = decoder.push(
      Buffer.concat([typed([['shift', 1]]), typed(['a', 'b']), typed([['shift', 0]]), typed(['c', ['8', 1], ['8', 2], ['8', 2], ['8', 0], 'enter'])]),
    );
    expect(bytes.toString('latin1')).toBe('ABc8\r');
  });

  it('a record split across reads is kept for the next', () => {
    const decoder = new KeyboardDecoder(24);
    const all = typed(['1', '2', 'enter']);
    const out = Buffer.concat([decoder.push(all.subarray(0, 37)), decoder.push(all.subarray(37, 101)), decoder.push(all.subarray(101))]);
    expect(out.toString('latin1')).toBe('12\r');
  });

  it('a key the layout does not know becomes a byte the line framing drops as noise', () => {
    expect([...new KeyboardDecoder(24).push(typed(['1', 'f1', 'enter']))]).toEqual([0x31, 0x00, 0x0d]);
  });
});
