import { pino } from 'pino';
import { loadConfig } from '../config/load.js';
import type { AgentOptions } from '../config/options.js';
import { DEFAULT_WIEGAND_TIMING, WiegandDecoder, decodeBits, type WiegandFrame } from '../core/wiegand.js';
import type { DoorOptions, ReaderOptions } from '../door/options.js';
import { createGpioDriver } from '../hardware/createGpio.js';
import type { EdgeInputs } from '../hardware/gpio.js';
import type { ReaderOptionsOf } from '../readers/options.js';
import { createReader } from '../readers/registry.js';
import { describeFrame, readerFormats } from '../readers/cardNumberings.js';
import { DataDirBusyError, dataDirHolder } from '../system/dataDirLock.js';
import { systemClock, systemTimers } from '../util/clock.js';
import { DoorAgentError, UsageError } from '../util/errors.js';
import { readScbk } from '../util/secretFiles.js';
import { DaemonUnavailableError } from '../control/client.js';
import type { FinalReply } from '../control/request.js';
import { configPath, stringOption, type Command, type CommandInput } from './context.js';
import { askDaemon, localTime, requester } from './daemonControl.js';
import { readerKey } from './osdpReaderChoice.js';
import { openOsdpSession, sessionTarget } from './osdpSession.js';

const STOP_DAEMON = 'stop the daemon first (systemctl stop door-agent)';

type Direction = 'entry' | 'exit';

function chooseReader(
  config: AgentOptions,
  uuid: string | undefined,
  flag: string | undefined,
): { door: DoorOptions; direction: Direction; reader: ReaderOptions } {
  if (flag !== undefined && flag !== 'entry' && flag !== 'exit') throw new UsageError(`--reader must be entry or exit, not ${flag}`);
  const direction: Direction = flag ?? 'entry';
  const readerOf = (d: DoorOptions) => (direction === 'exit' ? d.exitReader : d.reader);
  const doors = uuid ? config.doors.filter((d) => d.uuid === uuid.toLowerCase()) : config.doors.filter((d) => readerOf(d) !== undefined);
  if (uuid && doors.length === 0) throw new UsageError(`no door ${uuid} in the configuration`);
  if (doors.length !== 1)
    throw new UsageError(`name the door: --door UUID (doors with an ${direction} reader: ${doors.map((d) => d.uuid).join(', ') || 'none'})`);
  const door = doors[0]!;
  const reader = readerOf(door);
  if (!reader) throw new UsageError(`${door.name} (${door.uuid}) has no ${direction} reader`);
  return { door, direction, reader };
}

/** Waits on the Wiegand lines for the next card frame (or an ambiguous one, shown in each of its formats). */
function learnWiegand(config: AgentOptions, reader: Extract<ReaderOptions, { type: 'wiegand' }>, timeoutMs: number): Promise<string | null> {
  const formats = readerFormats(reader);
  const decoder = new WiegandDecoder(formats);
  const gpio = createGpioDriver(config.gpio);
  if (!gpio.openEdgeInputs) throw new DoorAgentError(`a Wiegand reader needs gpio.driver: chardev (${gpio.name} cannot time its pulses)`);
  return new Promise((resolve, reject) => {
    let edges: EdgeInputs | null = null;
    const finish = (text: string | null) => {
      clearInterval(flusher);
      clearTimeout(timer);
      edges?.close();
      gpio.close();
      resolve(text);
    };
    const onFrame = (frame: WiegandFrame) => {
      const text = describeFrame(frame, formats);
      if (text !== null) finish(text);
    };
    try {
      edges = gpio.openEdgeInputs!([reader.d0, reader.d1], reader.pull, (batch) => {
        for (const edge of batch) {
          const line = edge.pin === reader.d0 ? 'd0' : 'd1';
          for (const frame of decoder.push({ line, rising: edge.rising, atUs: edge.atUs, afterLoss: edge.afterLoss })) onFrame(frame);
        }
      });
    } catch (err) {
      gpio.close();
      const code = (err as NodeJS.ErrnoException).code;
      reject(
        new DoorAgentError(`cannot open GPIO ${reader.d0}/${reader.d1}: ${(err as Error).message}${code === 'EBUSY' ? `; ${STOP_DAEMON}` : ''}`, {
          cause: err,
        }),
      );
      return;
    }
    const flusher = setInterval(
      () => {
        if (!edges) return;
        for (const frame of decoder.flush(edges.nowUs())) onFrame(frame);
      },
      Math.ceil(DEFAULT_WIEGAND_TIMING.frameGapUs / 1000),
    );
    const timer = setTimeout(() => finish(null), timeoutMs);
  });
}

/**
 * An OSDP reader: the bus opened for it alone (its secure channel when it has a key, as the daemon would), then its
 * next osdp_RAW card shown as a Wiegand card is; bits that none of its formats decode are shown raw, with why.
 */
async function learnOsdp(door: DoorOptions, direction: Direction, reader: ReaderOptionsOf<'osdp'>, timeoutMs: number): Promise<string | null> {
  const formats = readerFormats(reader);
  const started = Date.now();
  let cardRead: (bits: number[]) => void = () => {};
  const card = new Promise<number[]>((resolve) => {
    cardRead = resolve;
  });
  const scbk = reader.scbkFile && !reader.installMode ? readScbk(`${readerKey(door, direction)}.scbkFile`, reader.scbkFile, process.getuid?.()) : undefined;
  const seconds = Math.round(timeoutMs / 1000);
  const session = await openOsdpSession(
    { ...sessionTarget(reader, scbk), onRawCard: (bits) => cardRead(bits) },
    {
      label: door.name,
      timeoutMs,
      why: `the reader at address ${reader.address} on ${reader.path} did not answer within ${seconds} s (${STOP_DAEMON}; is it wired and powered, its address and baud rate right?)`,
    },
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    const bits = await Promise.race([
      card,
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), Math.max(0, timeoutMs - (Date.now() - started)));
      }),
    ]);
    if (bits === null) return null;
    const frame = decodeBits(bits, formats);
    const raw = bits.reduce((value, bit) => (value << 1n) | BigInt(bit), 0n);
    return (
      describeFrame(frame, formats) ??
      `${bits.length} bits that none of the reader's formats decodes (${frame.kind === 'dropped' ? frame.reason : frame.kind}): raw bits 0x${raw.toString(16).padStart(Math.ceil(bits.length / 4), '0')}\n`
    );
  } finally {
    clearTimeout(timer);
    await session.close();
  }
}

/** Any other reader through the reader factory: the next card as the reader numbers it. */
function learnOther(reader: ReaderOptions, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const made = createReader(reader, {
      logger: pino({ level: 'silent' }),
      clock: systemClock,
      timers: systemTimers,
      gpio: { name: 'none' } as never,
      events: {
        credential: (c) => c.kind === 'card' && finish(`card:          ${c.value}\n`),
        connection: () => {},
      },
    });
    const finish = (text: string | null) => {
      clearTimeout(timer);
      void made.stop().then(() => resolve(text));
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    made.start();
  });
}

/**
 * While the daemon runs, through its control socket (docs/local-control.md): every card the reader reads until the
 * time is up or Ctrl-C, in every numbering, not decided meanwhile. Null when no daemon answers there (then the
 * reader is opened here, as without a daemon).
 */
async function learnThroughDaemon(
  config: AgentOptions,
  args: { door: string | undefined; reader: string | undefined },
  seconds: number,
  input: CommandInput,
): Promise<number | null> {
  const path = config.agent.controlSocket;
  if (path === null) return null;
  if (args.reader !== undefined && args.reader !== 'entry' && args.reader !== 'exit')
    throw new UsageError(`--reader must be entry or exit, not ${args.reader}`);
  const reader = args.door === undefined ? (args.reader ?? 'entry') : `${args.door}:${args.reader ?? 'entry'}`;
  const { stdout, stderr } = input.ctx;
  let cards = 0;
  let last: FinalReply;
  try {
    last = await askDaemon(path, config, { action: 'reader-learn', reader, seconds, user: requester() }, input, (line) => {
      if (line.type === 'info') stdout.write(`${line.message}\n`);
      else if (line.type === 'card') stdout.write(`${cards++ > 0 ? '\n' : ''}${localTime(line.at)} read (not decided):\n${line.text}`);
    });
  } catch (err) {
    if (err instanceof DaemonUnavailableError) return null;
    throw err;
  }
  if (last.type === 'error') {
    stderr.write(`door-agent: ${last.error}\n`);
    return 1;
  }
  if (cards === 0) {
    stderr.write(`door-agent: no card within ${seconds} s (is the reader wired and powered? --timeout S waits longer)\n`);
    return 1;
  }
  return 0;
}

/**
 * `door-agent reader learn [--door UUID] [--reader entry|exit] [--timeout S]`: prints the cards the door's reader
 * reads in every numbering (for enrolment at the service). Full numbers are printed here on purpose, to whoever runs
 * it at the device; nothing is logged. With the daemon running, through its control socket (every card until the
 * timeout or Ctrl-C); without, the reader is opened here and the first card shown.
 */
async function runReaderLearn(
  args: { config: string | undefined; door: string | undefined; reader: string | undefined; timeout: string | undefined },
  input: CommandInput,
): Promise<number> {
  const { ctx } = input;
  const seconds = args.timeout === undefined ? 60 : Number(args.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout must be a number of seconds, not ${args.timeout}`);
  const config = loadConfig(configPath(args.config, ctx.env));
  const viaDaemon = await learnThroughDaemon(config, args, Math.ceil(seconds), input);
  if (viaDaemon !== null) return viaDaemon;
  const holder = dataDirHolder(config.agent.dataDir);
  if (holder) throw new DataDirBusyError(config.agent.dataDir, holder.pid, `reader learn cannot open the reader the daemon holds: ${STOP_DAEMON}`);
  const { door, direction, reader } = chooseReader(config, args.door, args.reader);
  ctx.stdout.write(`${door.name}: present a card to the reader (waiting ${seconds} s)\n`);
  const timeoutMs = seconds * 1000;
  const text =
    reader.type === 'wiegand'
      ? await learnWiegand(config, reader, timeoutMs)
      : reader.type === 'osdp'
        ? await learnOsdp(door, direction, reader, timeoutMs)
        : await learnOther(reader, timeoutMs);
  if (text === null) {
    ctx.stderr.write(`door-agent: no card within ${seconds} s (is the reader wired and powered? --timeout S waits longer)\n`);
    return 1;
  }
  ctx.stdout.write(text);
  return 0;
}

export const command: Command = (input) =>
  runReaderLearn(
    {
      config: stringOption(input, 'config'),
      door: stringOption(input, 'door'),
      reader: stringOption(input, 'reader'),
      timeout: stringOption(input, 'timeout'),
    },
    input,
  );
