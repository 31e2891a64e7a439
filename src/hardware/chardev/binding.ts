import { createRequire } from 'node:module';
import { addonPath } from '../../util/addonPath.js';
import { DoorAgentError } from '../../util/errors.js';

/**
 * The seam to the GPIO character device (Linux uAPI v2, `<linux/gpio.h>`): the few ioctls door-agent needs,
 * as a small addon of our own (native/gpio_chardev.c) so nothing depends on which libgpiod the OS ships.
 * The driver (chardevGpio.ts) takes this interface; its tests use a fake of it.
 */

export interface ChipInfo {
  /** The kernel's name, e.g. "gpiochip0". */
  name: string;
  /** The driver's label, e.g. "pinctrl-bcm2711" (Pi 4), "pinctrl-rp1" (Pi 5). */
  label: string;
  lines: number;
}

export interface LineInfo {
  offset: number;
  /** The line's name from the device tree, e.g. "GPIO17" ("" when unnamed). */
  name: string;
  /** Who holds the line ("" when free). */
  consumer: string;
  used: boolean;
  output: boolean;
}

export type Bias = 'pull-up' | 'pull-down' | 'disabled' | 'as-is';

export interface LineRequest {
  /** Shown in `gpioinfo` as the line's consumer. */
  consumer: string;
  /** At most 32 lines per request. */
  offsets: readonly number[];
  direction: 'input' | 'output';
  /** Outputs: the level of each offset, set in the same ioctl that claims the line (no glitch). */
  values?: readonly (0 | 1)[];
  bias?: Bias;
  /** Inputs: report both edges, stamped by the kernel (CLOCK_MONOTONIC). */
  edges?: boolean;
  /** Inputs: the kernel's debounce period, 0 for none. */
  debounceUs?: number;
  /** Inputs with edges: how many events the kernel queues (0: its default, 16 per line). */
  eventBufferSize?: number;
}

export interface PollWatcher {
  /** Stops watching; the fd stays open. Idempotent. */
  close(): void;
}

export interface ChardevBinding {
  /** GPIO_GET_CHIPINFO_IOCTL on `path` (opened and closed). */
  chipInfo(path: string): ChipInfo;
  /** GPIO_V2_GET_LINEINFO_IOCTL for one line. */
  lineInfo(path: string, offset: number): LineInfo;
  /** GPIO_V2_GET_LINE_IOCTL: the lines held until `close(fd)` (or the process ends). The fd is non-blocking. */
  requestLines(path: string, request: LineRequest): number;
  /** Bit i of the result is the level of offsets[i] (GPIO_V2_LINE_GET_VALUES_IOCTL). */
  getValues(fd: number, mask: number): number;
  /** Sets offsets[i] to bit i of `bits` for every bit set in `mask` (GPIO_V2_LINE_SET_VALUES_IOCTL). */
  setValues(fd: number, mask: number, bits: number): void;
  /**
   * Every event queued on the fd, as the kernel's 48-byte `struct gpio_v2_line_event` records back to back;
   * null when none is queued (EAGAIN). Never blocks.
   */
  readEvents(fd: number): Buffer | null;
  /** Calls `onReadable` from the event loop whenever the fd is readable (uv_poll), `onError` if polling fails. */
  watch(fd: number, onReadable: () => void, onError: (message: string) => void): PollWatcher;
  close(fd: number): void;
}

let loaded: ChardevBinding | undefined;

/**
 * The GPIO character device addon (loaded once). It is built from native/gpio_chardev.c at `npm ci`; a
 * DoorAgentError says how to build it when it is missing or was built for another Node.js.
 */
export function loadChardevBinding(): ChardevBinding {
  if (loaded) return loaded;
  const path = addonPath(import.meta.dirname, 'gpio_chardev');
  try {
    loaded = createRequire(import.meta.url)(path) as ChardevBinding;
  } catch (err) {
    throw new DoorAgentError(
      `the GPIO character device addon cannot be loaded from ${path} (${err instanceof Error ? err.message : String(err)}): ` +
        'run npm ci (or npm rebuild) in the door-agent directory to build it',
      { cause: err },
    );
  }
  return loaded;
}
