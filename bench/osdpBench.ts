/**
 * OSDP readers (issue 13): a card presented to an OSDP reader until the relay moves, with the secure channel, at
 * 9600 and 115200 baud. The real daemon polls the simulated reader (src/readers/osdp/readerEmulator.ts) over a
 * socat pty pair. A pty has no baud rate, so the reader answers each command after the time its bytes and the
 * command's would take on the wire (10 bits a byte). Floor: the bytes' time on the wire of the exchange that
 * carries the card (a secure POLL and a secure osdp_RAW reply) plus the bare pty line (a byte there and back).
 */
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { encodeCard } from '../src/core/wiegand.js';
import { OsdpEmulator } from '../src/readers/osdp/readerEmulator.js';
import { AGENT_NODE_OPTIONS, type BenchRow } from './report.js';
import { benchAgentConfig, cli, ptyPair } from './benchAgent.js';
import { summary } from './tapDuringSync.js';
import { setLevel, timeUntilLevel } from './valueFile.js';
import { sleep, waitFor } from './wait.js';

const TAPS = 200;
const KEY = '00112233445566778899aabbccddeeff';
/** A secure POLL (mark, header, security block, code, MAC, CRC) and a secure osdp_RAW of a 26-bit card. */
const CARD_EXCHANGE_BYTES = 15 + 30;

async function openPort(path: string, baudRate: number): Promise<SerialPort> {
  const port = new SerialPort({ path, baudRate, autoOpen: false });
  await new Promise<void>((ok, fail) => port.open((err) => (err ? fail(err) : ok())));
  return port;
}

/** The bare line: one byte through the pty pair and back, p50 and p99 in ms. */
async function bareLine(a: SerialPort, b: SerialPort): Promise<{ p50: number; p99: number }> {
  b.on('data', (d: Buffer) => b.write(d));
  const samples: number[] = [];
  for (let i = 0; i < 200; i++) {
    const started = performance.now();
    await new Promise<void>((done) => {
      a.once('data', () => done());
      a.write(Buffer.from([i & 0xff]));
    });
    samples.push(performance.now() - started);
  }
  b.removeAllListeners('data');
  return summary(samples);
}

async function measure(dir: string, baudRate: number): Promise<{ taps: number[]; line: { p50: number; p99: number } }> {
  mkdirSync(dir, { recursive: true });
  const scbk = join(dir, 'scbk');
  writeFileSync(scbk, `${KEY}\n`);
  chmodSync(scbk, 0o600);
  const socat = await ptyPair('osdp', `${dir}/bus`, `${dir}/reader`);
  const config = benchAgentConfig(dir, {
    reader: `{ type: osdp, path: ${dir}/bus, baudRate: ${baudRate}, address: 0, scbkFile: ${scbk} }`,
    unlockSeconds: 1,
  });
  // The bare line first, before the agent holds the bus.
  const cpSide = await openPort(`${dir}/bus`, baudRate);
  const readerSide = await openPort(`${dir}/reader`, baudRate);
  const line = await bareLine(cpSide, readerSide);
  await new Promise<void>((r) => cpSide.close(() => r()));
  // The simulated reader answers after its bytes and the command's would have crossed the wire.
  let commandBytes = 0;
  const reader = new OsdpEmulator([0], (bytes) => {
    const wireMs = ((commandBytes + bytes.length) * 10 * 1000) / baudRate;
    commandBytes = 0;
    setTimeout(() => readerSide.write(bytes), wireMs);
  });
  reader.reader(0).scbk = Buffer.from(KEY, 'hex');
  readerSide.on('data', (chunk: Buffer) => {
    commandBytes += chunk.length;
    reader.receive(chunk);
  });
  const log = openSync(join(dir, 'agent.log'), 'w');
  const agent = spawn(process.execPath, [...AGENT_NODE_OPTIONS, cli, 'run', '--config', config], { stdio: ['ignore', log, 'inherit'] });
  closeSync(log);
  try {
    const relayFile = join(dir, 'gpio/gpio17/value');
    const contactFile = join(dir, 'gpio/gpio27/value');
    await waitFor(
      'osdp',
      () => existsSync(relayFile) && existsSync(contactFile) && reader.reader(0).log.includes('established'),
      15_000,
      'the secure channel with the simulated reader',
    );
    const relay = openSync(relayFile, 'r');
    const contact = openSync(contactFile, 'r+');
    const taps: number[] = [];
    try {
      for (let i = 0; i < TAPS + 10; i++) {
        // A random moment in the poll cycle, as a person's tap is; a tap every 200 ms or more with the relock below,
        // as the reader's pace decides at most 5 cards a second (src/core/readerPace.ts): at 115200 baud a tap and
        // its relock take some 70 ms, so a shorter wait here drains the pace's burst and a tap is refused.
        await sleep(160 + Math.random() * 40);
        const ms = await timeUntilLevel(relayFile, relay, '1', () => reader.presentCard(0, encodeCard(4_213_578n)), 5000);
        if (i >= 10) taps.push(ms);
        setLevel(contact, '1');
        await sleep(60);
        await timeUntilLevel(relayFile, relay, '0', () => setLevel(contact, '0'), 5000);
      }
    } finally {
      closeSync(relay);
      closeSync(contact);
    }
    return { taps, line };
  } finally {
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
    await new Promise<void>((r) => readerSide.close(() => r()));
    socat.kill('SIGTERM');
  }
}

export async function benchmarkOsdp(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'osdp');
  rmSync(dir, { recursive: true, force: true });
  const rows: BenchRow[] = [];
  try {
    for (const baud of [9600, 115200]) {
      const { taps, line } = await measure(join(dir, String(baud)), baud);
      const s = summary(taps);
      const wire = (CARD_EXCHANGE_BYTES * 10 * 1000) / baud;
      const floorP50 = wire + line.p50;
      const floorP99 = wire + line.p99;
      rows.push(
        {
          bench: 'osdp',
          metric: `card presented to relay p50, ${baud} baud, secure channel (${TAPS} taps)`,
          value: s.p50,
          unit: 'ms',
          floor: floorP50,
          floorLabel: `${CARD_EXCHANGE_BYTES} bytes on the wire (${wire.toFixed(1)} ms) + bare pty p50`,
          ratio: s.p50 / floorP50,
          target: '',
          met: null,
        },
        {
          bench: 'osdp',
          metric: `card presented to relay p99, ${baud} baud, secure channel`,
          value: s.p99,
          unit: 'ms',
          floor: floorP99,
          floorLabel: 'wire + bare pty p99',
          ratio: s.p99 / floorP99,
          target: baud === 9600 ? '< 60' : '',
          met: baud === 9600 ? s.p99 < 60 : null,
        },
      );
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
