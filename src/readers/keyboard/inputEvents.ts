/**
 * USB "keyboard" card readers (HID, /dev/input/event*): they type the card number and press Enter. This turns
 * the kernel's `struct input_event` records into the bytes such a reader means, for the same line framing as a
 * serial reader (cards, keypad PINs, QR tokens). Pure: records in, bytes out.
 *
 * struct input_event { struct timeval time; __u16 type; __u16 code; __s32 value; }: the time is two kernel longs,
 * so a record is 24 bytes on a 64-bit kernel (arm64, x64) and 16 on a 32-bit one (armhf Raspberry Pi OS).
 */

/** @internal */
export const EV_KEY = 1;
const PRESS = 1; // 0 release, 2 autorepeat (ignored: a reader never holds a key)

/** The record size for a process on `arch` (process.arch); a 32-bit userland runs on a 32-bit kernel ABI here. @internal */
export function inputEventBytes(arch: string = process.arch): 16 | 24 {
  return arch === 'arm' || arch === 'ia32' ? 16 : 24;
}

// Linux key codes (input-event-codes.h) to characters, US layout as HID readers send: [plain, shifted].
const KEYS: Record<number, [string, string]> = {
  2: ['1', '!'],
  3: ['2', '@'],
  4: ['3', '#'],
  5: ['4', '$'],
  6: ['5', '%'],
  7: ['6', '^'],
  8: ['7', '&'],
  9: ['8', '*'],
  10: ['9', '('],
  11: ['0', ')'],
  12: ['-', '_'],
  13: ['=', '+'],
  16: ['q', 'Q'],
  17: ['w', 'W'],
  18: ['e', 'E'],
  19: ['r', 'R'],
  20: ['t', 'T'],
  21: ['y', 'Y'],
  22: ['u', 'U'],
  23: ['i', 'I'],
  24: ['o', 'O'],
  25: ['p', 'P'],
  26: ['[', '{'],
  27: [']', '}'],
  30: ['a', 'A'],
  31: ['s', 'S'],
  32: ['d', 'D'],
  33: ['f', 'F'],
  34: ['g', 'G'],
  35: ['h', 'H'],
  36: ['j', 'J'],
  37: ['k', 'K'],
  38: ['l', 'L'],
  39: [';', ':'],
  40: ["'", '"'],
  41: ['`', '~'],
  43: ['\\', '|'],
  44: ['z', 'Z'],
  45: ['x', 'X'],
  46: ['c', 'C'],
  47: ['v', 'V'],
  48: ['b', 'B'],
  49: ['n', 'N'],
  50: ['m', 'M'],
  51: [',', '<'],
  52: ['.', '>'],
  53: ['/', '?'],
  57: [' ', ' '],
  // The numeric keypad (many readers type there).
  55: ['*', '*'],
  71: ['7', '7'],
  72: ['8', '8'],
  73: ['9', '9'],
  74: ['-', '-'],
  75: ['4', '4'],
  76: ['5', '5'],
  77: ['6', '6'],
  78: ['+', '+'],
  79: ['1', '1'],
  80: ['2', '2'],
  81: ['3', '3'],
  82: ['0', '0'],
  83: ['.', '.'],
  98: ['/', '/'],
};
const ENTER = new Set([28, 96]); // KEY_ENTER, KEY_KPENTER
const SHIFT = new Set([42, 54]); // KEY_LEFTSHIFT, KEY_RIGHTSHIFT
const CR = 0x0d;
/** A key the layout does not know: a byte the line framing counts as binary noise, so the line is dropped. */
const UNKNOWN = 0x00;

/** Keeps the shift state and a partial record across reads; `push` returns the bytes the reader typed. */
export class KeyboardDecoder {
  private rest: Buffer = Buffer.alloc(0);
  private shifted = 0;

  constructor(private readonly recordBytes: 16 | 24 = inputEventBytes()) {}

  push(chunk: Buffer): Buffer {
    const data = this.rest.length > 0 ? Buffer.concat([this.rest, chunk]) : chunk;
    const whole = data.length - (data.length % this.recordBytes);
    const out: number[] = [];
    const at = this.recordBytes - 8; // type, code and value follow the two time fields
    for (let offset = 0; offset < whole; offset += this.recordBytes) {
      if (data.readUInt16LE(offset + at) !== EV_KEY) continue; // EV_SYN, EV_MSC (scan codes), EV_LED...
      const code = data.readUInt16LE(offset + at + 2);
      const value = data.readInt32LE(offset + at + 4);
      if (SHIFT.has(code)) {
        if (value === PRESS) this.shifted++;
        else if (value === 0) this.shifted = Math.max(0, this.shifted - 1);
        continue;
      }
      if (value !== PRESS) continue;
      if (ENTER.has(code)) out.push(CR);
      else {
        const key = KEYS[code];
        out.push(key ? key[this.shifted > 0 ? 1 : 0].charCodeAt(0) : UNKNOWN);
      }
    }
    this.rest = Buffer.from(data.subarray(whole));
    return Buffer.from(out);
  }
}

/** One record, as the kernel writes it (tests and fixtures). @internal */
export function encodeInputEvent(type: number, code: number, value: number, recordBytes: 16 | 24 = inputEventBytes()): Buffer {
  const buf = Buffer.alloc(recordBytes);
  const at = recordBytes - 8;
  buf.writeUInt16LE(type, at);
  buf.writeUInt16LE(code, at + 2);
  buf.writeInt32LE(value, at + 4);
  return buf;
}
