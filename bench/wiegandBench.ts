/**
 * Wiegand readers (issue 12), on the simulated chip (the kernel's edge records through a FIFO, the same parser and
 * decoder as on a Pi's character device):
 * - decode cost per 26-bit frame (52 edge records parsed, decoded, numbered) beside a bare pass over the same
 *   records (reading their fields, nothing else);
 * - card (last edge) to relay at an idle agent, beside the floor: the frame gap (a Wiegand frame ends only after
 *   25 ms of quiet) plus a bare FIFO reader flipping a value file;
 * - the same taps while the agent runs full syncs of 30,000 users back to back: every card read (a lost read fails
 *   the benchmark), p50 beside idle.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, openSync, closeSync, rmSync, writeFileSync, writeSync, constants } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_WIEGAND_TIMING, FormatSet, WiegandDecoder, edgesOf, encodeCard } from '../src/core/wiegand.js';
import { BUILTIN_FORMATS, cardNumber } from '../src/core/wiegandFormats.js';
import { LineEventParser, encodeLineEvent } from '../src/hardware/chardev/lineEvents.js';
import type { BenchRow } from './report.js';
import { duringSyncs, summary } from './tapDuringSync.js';
import { measureAgent } from './tapToRelay.js';
import { level, timeUntilLevel } from './valueFile.js';
import { sleep } from './wait.js';

const FRAMES = 20_000;
const TAPS = 300;
const root = resolve(fileURLToPath(import.meta.url), '../../..');

function frameRecords(): Buffer {
  const edges = edgesOf(encodeCard(4_213_578n), 0);
  return Buffer.concat(
    edges.map((e, i) =>
      encodeLineEvent({ offset: e.line === 'd0' ? 5 : 6, rising: e.rising, timestampNs: BigInt(1_000_000_000 + e.atUs * 1000), seqno: i + 1 }),
    ),
  );
}

/** ns per frame, best of three rounds. */
function decodeCost(): { decode: number; bare: number } {
  const records = frameRecords();
  const gapUs = DEFAULT_WIEGAND_TIMING.frameGapUs;
  let sink = 0;
  const round = (fn: (i: number) => void) => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < FRAMES; i++) fn(i);
    return Number(process.hrtime.bigint() - started) / FRAMES;
  };
  const parser = new LineEventParser();
  const decoder = new WiegandDecoder(new FormatSet(BUILTIN_FORMATS.filter((f) => f.name === 'H10301')));
  const decode = (i: number) => {
    const shift = i * 100_000; // each frame 100 ms after the last
    for (const e of parser.push(records)) {
      for (const f of decoder.push({ line: e.offset === 5 ? 'd0' : 'd1', rising: e.rising, atUs: e.timestampUs + shift, afterLoss: false })) {
        if (f.kind === 'card') sink += cardNumber(f, 'data').length;
      }
    }
    for (const f of decoder.flush(records.readUInt32LE(records.length - 48) / 1000 + shift + gapUs + 1_000_000))
      if (f.kind === 'card') sink += cardNumber(f, 'data').length;
  };
  const bare = () => {
    for (let at = 0; at < records.length; at += 48) sink += records.readUInt32LE(at) + records.readUInt32LE(at + 8) + records.readUInt32LE(at + 12);
  };
  const best = (fn: (i: number) => void) => Math.min(round(fn), round(fn), round(fn));
  const result = { decode: best(decode), bare: best(bare) };
  if (sink === 0) throw new Error('wiegand: the decoder produced no card');
  return result;
}

async function fifoFloor(dir: string): Promise<number[]> {
  const fifo = join(dir, 'floor-edges');
  const made = spawnSync('mkfifo', [fifo]);
  if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
  const valueFile = join(dir, 'floor-value');
  writeFileSync(valueFile, '0\n');
  const reader = spawn(process.execPath, [join(root, 'dist/bench/floorFifo.js'), fifo, valueFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((r) => reader.stdout!.once('data', () => r()));
    const records = frameRecords();
    const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    const value = openSync(valueFile, 'r');
    const samples: number[] = [];
    try {
      for (let i = 0; i < TAPS + 20; i++) {
        const next = level(value) === '1' ? '0' : '1';
        const ms = await timeUntilLevel(valueFile, value, next, () => writeSync(writer, records));
        if (i >= 20) samples.push(ms);
        await sleep(25);
      }
    } finally {
      closeSync(writer);
      closeSync(value);
    }
    return samples;
  } finally {
    reader.kill('SIGTERM');
  }
}

export async function benchmarkWiegand(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'wiegand');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'idle'), { recursive: true });
  const b = 'wiegand';
  try {
    const cost = decodeCost();
    const floor = summary(await fifoFloor(dir));
    const gapMs = DEFAULT_WIEGAND_TIMING.frameGapUs / 1000;
    const idle = summary((await measureAgent(join(dir, 'idle'), { reader: 'wiegand', taps: TAPS })).taps);
    const busy = await duringSyncs(join(dir, 'busy'), 30_000, { reader: 'wiegand', taps: TAPS });
    const during = summary(busy.run.taps);
    const floorP50 = gapMs + floor.p50;
    return [
      {
        bench: b,
        metric: `decode one 26-bit frame (52 edge records: parse, decode, number; ${FRAMES} frames)`,
        value: cost.decode / 1000,
        unit: 'µs',
        floor: cost.bare / 1000,
        floorLabel: 'bare pass over the records',
        ratio: cost.decode / cost.bare,
        target: '',
        met: null,
      },
      {
        bench: b,
        metric: `card (last edge) to relay p50, idle (${TAPS} taps)`,
        value: idle.p50,
        unit: 'ms',
        floor: floorP50,
        floorLabel: `frame gap ${gapMs} ms + bare FIFO reader p50`,
        ratio: idle.p50 / floorP50,
        target: '',
        met: null,
      },
      {
        bench: b,
        metric: `card (last edge) to relay p99, idle`,
        value: idle.p99,
        unit: 'ms',
        floor: gapMs + floor.p99,
        floorLabel: `frame gap + bare FIFO reader p99`,
        ratio: idle.p99 / (gapMs + floor.p99),
        target: '',
        met: null,
      },
      {
        bench: b,
        metric: `card to relay p50 during full syncs of 30,000 users (${busy.started} started, ${busy.completed} fetched every user; all ${busy.run.taps.length} cards read: a lost one fails the run)`,
        value: during.p50,
        unit: 'ms',
        floor: idle.p50,
        floorLabel: 'idle p50',
        ratio: during.p50 / idle.p50,
        target: '<= 2x idle, no read lost',
        met: during.p50 <= 2 * idle.p50,
      },
      {
        bench: b,
        metric: 'slowest card over the idle maximum, during syncs',
        value: during.max - idle.max,
        unit: 'ms',
        floor: idle.max,
        floorLabel: 'idle maximum',
        ratio: null,
        target: '<= 50',
        met: during.max - idle.max <= 50,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
