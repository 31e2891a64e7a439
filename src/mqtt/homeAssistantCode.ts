import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { MIN_HOME_ASSISTANT_CODE_LENGTH } from '../util/secretFiles.js';

/** Wrong codes are counted over this window (monotonic ms)... */
const WINDOW_MS = 60_000;
/** ...and this many within it are logged at warn: someone may be guessing. */
const WARN_AFTER = 3;

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * The code Home Assistant asks for before it unlocks (mqtt.homeAssistant.codeFile). Compared in constant time:
 * both sides are hashed to 32 bytes and compared with timingSafeEqual, so neither the code's length nor its first
 * differing character shows in the time an answer takes. Wrong (or missing) codes are counted: the third within
 * a minute, and each one after it that minute, is logged at warn. The code itself is never logged.
 */
export class HomeAssistantCode {
  private readonly expected: Buffer;
  private readonly wrongAt: number[] = [];
  /** The `code_format` of the lock's discovery: what Home Assistant checks the code against before it sends it. */
  readonly format: string;

  constructor(
    code: string,
    private readonly deps: { monoNow: () => number; logger: Logger },
  ) {
    this.expected = digest(code);
    // The form of the code, not its length: all digits (Home Assistant then offers a keypad) or any characters.
    this.format = /^\d+$/.test(code) ? `^\\d{${MIN_HOME_ASSISTANT_CODE_LENGTH},}$` : `^.{${MIN_HOME_ASSISTANT_CODE_LENGTH},}$`;
  }

  /** Whether `given` is the code; a wrong or missing one is counted. */
  matches(given: string | null | undefined): boolean {
    const ok = timingSafeEqual(digest(given ?? ''), this.expected) && typeof given === 'string' && given !== '';
    if (!ok) this.countWrong();
    return ok;
  }

  private countWrong(): void {
    const now = this.deps.monoNow();
    this.wrongAt.push(now);
    while (this.wrongAt.length > 0 && this.wrongAt[0]! <= now - WINDOW_MS) this.wrongAt.shift();
    if (this.wrongAt.length > WARN_AFTER * 10) this.wrongAt.shift(); // bounded, whatever the rate
    if (this.wrongAt.length >= WARN_AFTER) {
      this.deps.logger.warn(
        { wrongCodes: this.wrongAt.length, withinSeconds: WINDOW_MS / 1000 },
        'wrong Home Assistant codes for a remote unlock, several within a minute: someone may be guessing',
      );
    }
  }
}
