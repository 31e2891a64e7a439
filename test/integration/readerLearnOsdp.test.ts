import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { encodeCard } from '../../src/core/wiegand.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { PtyPair } from '../support/socat.js';
import { sleep } from '../support/wait.js';

// `door-agent reader learn` (the built CLI) on an OSDP reader: a socat pty pair is the RS-485 line, the emulated
// reader (readerEmulator.ts, in this process) answers on its far end. The card is held to the reader until the
// command has read it, as an installer does.
const tmp = tempDir('door-agent-learn-osdp-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const KEY = '00112233445566778899aabbccddeeff';

async function line(dir: string, options: { scbk?: boolean } = {}) {
  const pty = new PtyPair(join(dir, 'bus'), join(dir, 'reader-side'));
  await pty.plugIn();
  cleanups.push(() => pty.unplug());
  const port = new SerialPort({ path: join(dir, 'reader-side'), baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  cleanups.push(() => new Promise<void>((r) => port.close(() => r())));
  const pd = new OsdpEmulator([3], (bytes) => port.write(bytes));
  if (options.scbk) pd.reader(3).scbk = Buffer.from(KEY, 'hex');
  port.on('data', (chunk: Buffer) => pd.receive(chunk));
  return pd;
}

/** Runs reader learn while the card is held to the reader (queued again whenever the last one was read). */
async function learnWhileHeld(pd: OsdpEmulator, config: string, bits: number[]) {
  let done = false;
  const learning = runCliAsync(['reader', 'learn', '--config', config, '--timeout', '30']).finally(() => {
    done = true;
  });
  while (!done) {
    if (pd.reader(3).pending.length === 0) pd.presentCard(3, bits);
    await sleep(200);
  }
  return learning;
}

describe('reader learn on an OSDP reader', () => {
  it('prints the next card in every numbering, over the secure channel when the reader has a key', async () => {
    const dir = join(tmp.path, 'secure');
    mkdirSync(dir);
    writeFileSync(join(dir, 'scbk'), `${KEY}\n`, { mode: 0o600 });
    const pd = await line(dir, { scbk: true });
    const config = writeConfig(dir, { doorExtra: `    reader: { type: osdp, path: ${dir}/bus, address: 3, scbkFile: ${dir}/scbk }\n` });
    const r = await learnWhileHeld(pd, config, encodeCard(4_213_578n));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Front door: present a card to the reader');
    expect(r.stdout).toContain('format:        H10301 (26 bits)');
    expect(r.stdout).toContain('facility:      64');
    expect(r.stdout).toContain('card:          19274');
    expect(r.stdout).toContain('data:          4213578');
    expect(r.stdout).toContain('printed:       64:19274');
    expect(pd.reader(3).log).toContain('established'); // the card came over the secure channel
  });

  it('bits none of its formats decodes are shown raw, with why; a reader that does not answer: exit 1, saying so', async () => {
    const dir = join(tmp.path, 'formats');
    mkdirSync(dir);
    const pd = await line(dir);
    // The site's readers are set to 35-bit Corporate 1000: a 26-bit card fits none of them.
    const config = writeConfig(dir, { doorExtra: `    reader: { type: osdp, path: ${dir}/bus, address: 3, format: [C1k35] }\n` });
    const r = await learnWhileHeld(pd, config, encodeCard(4_213_578n));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/26 bits that none of the reader's formats decodes \(bit_count\): raw bits 0x[0-9a-f]{7}\n/);

    pd.reader(3).silent = true;
    const silent = await runCliAsync(['reader', 'learn', '--config', config, '--timeout', '2']);
    expect(silent.status).toBe(1);
    expect(silent.stderr).toContain('Front door: the reader at address 3 on');
    expect(silent.stderr).toContain('did not answer within 2 s');
  });
});
