import type { Logger } from 'pino';
import { DEFAULT_WIEGAND_TIMING, FormatSet, WiegandDecoder, type WiegandFrame } from '../../core/wiegand.js';
import { formatsFor, presentedCard } from '../../core/wiegandFormats.js';
import type { Clock, Timers } from '../../util/clock.js';
import { DoorAgentError } from '../../util/errors.js';
import type { Level } from '../../core/relay.js';
import type { EdgeInputs, GpioDriver, PinEdge } from '../../hardware/gpio.js';
import { NoiseReporter, type NoiseSummary } from '../noiseReporter.js';
import { KeypadEntry } from '../keypadEntry.js';
import type { ReaderFrame } from '../readerFrames.js';
import type { ReaderOptionsOf } from '../options.js';
import type { Reader } from '../reader.js';

const NOISE_WARNING_INTERVAL_MS = 1000;
/** Dropped frames go into the audit log at most this often, summed (someone probing the wires, a bad cable). */
const NOISE_AUDIT_INTERVAL_MS = 60_000;

/** Its lines, formats and numbering as configured (`formats`, when absent, are the built-ins `format` names). */
export interface WiegandReaderOptions extends Pick<ReaderOptionsOf<'wiegand'>, 'd0' | 'd1' | 'pull' | 'format' | 'formats' | 'numbering'> {
  gpio: GpioDriver;
  onFrame: (frame: ReaderFrame) => void;
  /** Frames dropped since the last call, at most once per NOISE_AUDIT_INTERVAL_MS (for the audit log). */
  onNoise?: (summary: NoiseSummary) => void;
  onConnectionChange?: (connected: boolean) => void;
  logger: Logger;
  /** Keypad timing (the PIN's key timeout) runs on this clock; frames are timed by the edges themselves. */
  clock: Clock;
  timers: Timers;
}

/**
 * A door's Wiegand reader on two GPIO inputs: edges (kernel-timestamped) into the pure decoder, cards and keys
 * into the same keypad and card logic as a serial reader. A frame ends after the decoder's gap of quiet; the
 * check runs one turn of the event loop after the timer, so edges already queued are read first and a busy
 * loop never cuts a frame short. Dropped frames are never decided: they are counted, logged once a second and
 * audited once a minute.
 */
export class WiegandReader implements Reader {
  private readonly decoder: WiegandDecoder;
  private readonly keypad = new KeypadEntry();
  private edges: EdgeInputs | null = null;
  private flushTimer: unknown = null;
  private readonly warnings: NoiseReporter;
  private readonly audit: NoiseReporter;
  private connectedFlag = false;
  /** The lengths whose ambiguity has been logged (once each: the hint does not change). */
  private readonly ambiguityLogged = new Set<number>();

  constructor(private readonly options: WiegandReaderOptions) {
    this.decoder = new WiegandDecoder(new FormatSet(options.formats ?? formatsFor(options.format, [])));
    this.warnings = new NoiseReporter({
      timers: options.timers,
      intervalMs: NOISE_WARNING_INTERVAL_MS,
      report: ({ count, units, reasons }) =>
        options.logger.warn({ d0: options.d0, d1: options.d1, frames: count, bits: units, reasons }, 'Wiegand frames dropped (noise, parity or wiring)'),
    });
    this.audit = new NoiseReporter({ timers: options.timers, intervalMs: NOISE_AUDIT_INTERVAL_MS, report: (s) => options.onNoise?.(s) });
  }

  get connected(): boolean {
    return this.connectedFlag;
  }

  /** D0 and D1 now: both 1 at rest; a 0 at rest is a line held low (wiring, a missing level shifter). */
  lineLevels(): { d0: Level; d1: Level } | null {
    const levels = this.edges?.levels();
    return levels ? { d0: levels[0]!, d1: levels[1]! } : null;
  }

  start(): void {
    const { gpio, d0, d1, pull } = this.options;
    if (!gpio.openEdgeInputs) {
      throw new DoorAgentError(`a Wiegand reader needs timestamped edges, which gpio.driver ${gpio.name} cannot give: use gpio.driver: chardev`);
    }
    this.edges = gpio.openEdgeInputs([d0, d1], pull, (edges) => this.receive(edges));
    this.connectedFlag = true;
    this.options.onConnectionChange?.(true);
    this.options.logger.info({ d0, d1, format: this.options.format }, 'Wiegand reader listening');
  }

  async stop(): Promise<void> {
    if (this.flushTimer !== null) this.options.timers.clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.edges?.close();
    this.edges = null;
    this.warnings.flush();
    this.audit.flush();
    if (this.connectedFlag) {
      this.connectedFlag = false;
      this.options.onConnectionChange?.(false);
    }
  }

  private receive(edges: readonly PinEdge[]): void {
    const { d0 } = this.options;
    for (const edge of edges) {
      const frames = this.decoder.push({ line: edge.pin === d0 ? 'd0' : 'd1', rising: edge.rising, atUs: edge.atUs, afterLoss: edge.afterLoss });
      for (const frame of frames) this.handle(frame);
    }
    this.armFlush();
  }

  private armFlush(): void {
    if (this.flushTimer !== null) this.options.timers.clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (!this.decoder.pending || !this.edges) return;
    this.flushTimer = this.options.timers.setTimeout(
      () => {
        // A zero timeout runs on the loop's next turn, after its I/O phase has read any edge already queued.
        this.flushTimer = this.options.timers.setTimeout(() => {
          this.flushTimer = null;
          if (!this.edges) return;
          for (const frame of this.decoder.flush(this.edges.nowUs())) this.handle(frame);
          this.armFlush();
        }, 0);
      },
      Math.ceil(DEFAULT_WIEGAND_TIMING.frameGapUs / 1000) + 1,
    );
  }

  private handle(frame: WiegandFrame): void {
    const now = this.options.clock.monoNow();
    switch (frame.kind) {
      case 'card':
        this.keypad.clear(); // a card starts a new interaction
        this.options.onFrame(Object.assign({ kind: 'card' as const, decoded: frame }, presentedCard(frame, this.options.numbering)));
        return;
      case 'key':
        for (const f of this.keypad.press(frame.key, now)) this.options.onFrame(f);
        return;
      case 'dropped':
        if (frame.reason === 'ambiguous_format' && !this.ambiguityLogged.has(frame.bits)) {
          this.ambiguityLogged.add(frame.bits);
          this.options.logger.warn(
            { d0: this.options.d0, d1: this.options.d1, bits: frame.bits, formats: frame.candidates },
            `${frame.bits}-bit card refused: more than one format has that length; set doors[].reader.format to one of ${frame.candidates?.join(', ')}`,
          );
        }
        this.warnings.add(frame.bits, [frame.reason]);
        this.audit.add(frame.bits, [frame.reason]);
        return;
    }
  }
}
