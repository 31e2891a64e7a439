import { EV_KEY, encodeInputEvent } from '../../src/readers/keyboard/inputEvents.js';
import type { InputIo } from '../../src/readers/keyboard/inputDevicePort.js';

const DIGIT: Record<string, number> = { '1': 2, '2': 3, '3': 4, '4': 5, '5': 6, '6': 7, '7': 8, '8': 9, '9': 10, '0': 11 };
const keys = (text: string) =>
  Buffer.concat([...text].flatMap((c) => [encodeInputEvent(EV_KEY, c === '\n' ? 28 : DIGIT[c]!, 1), encodeInputEvent(EV_KEY, c === '\n' ? 28 : DIGIT[c]!, 0)]));

/** The system as a keyboard reader sees it: a device that can be plugged, unplugged, grabbed by someone else. */
export class FakeInput implements InputIo {
  plugged = true;
  grabbedElsewhere = false;
  grabbable = true;
  opens = 0;
  private queued: Buffer[] = [];
  private readable: (() => void) | null = null;
  private error: ((m: string) => void) | null = null;
  open(path: string): number {
    if (!this.plugged) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
    this.opens++;
    return 7;
  }
  grab(): void {
    if (this.grabbedElsewhere) throw Object.assign(new Error('EVIOCGRAB: busy'), { code: 'EBUSY' });
    if (!this.grabbable) throw Object.assign(new Error('EVIOCGRAB: not a tty'), { code: 'ENOTTY' });
  }
  watch(_fd: number, onReadable: () => void, onError: (m: string) => void) {
    this.readable = onReadable;
    this.error = onError;
    return { close: () => void ((this.readable = null), (this.error = null)) };
  }
  read(): Buffer | null {
    return this.queued.length > 0 ? Buffer.concat(this.queued.splice(0)) : null;
  }
  closes = 0;
  close(): void {
    this.closes++;
  }
  type(text: string): void {
    this.queued.push(keys(text));
    this.readable?.();
  }
  unplug(): void {
    this.plugged = false;
    this.error?.('polling fd 7 failed: bad file descriptor (EBADF); the fd reports an error or hang-up');
  }
}
