import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { PtyPair } from '../support/socat.js';
import { sleep } from '../support/wait.js';

// The real daemon with an RDM6300-style module on a socat pty: binary STX/ETX frames, repeated while the card is
// held. Cards of examples/snapshot.json: 4213578 Alice (Staff), 4213579 Bob (suspended).

const tmp = tempDir('door-agent-rdm-');
afterAll(tmp.cleanup);
const running: Array<{ daemon: Daemon; pty: PtyPair }> = [];
afterEach(async () => {
  for (const { daemon, pty } of running.splice(0)) {
    await daemon.stop('SIGKILL');
    await pty.unplug();
  }
});

/** A frame as the module sends it: STX, the 40-bit ID in hex, the XOR of its bytes in hex, ETX. */
function frame(idHex: string, checksum?: number): Buffer {
  const xor = checksum ?? Buffer.from(idHex, 'hex').reduce((a, b) => a ^ b, 0);
  return Buffer.concat([Buffer.from([0x02]), Buffer.from(`${idHex}${xor.toString(16).padStart(2, '0')}`.toUpperCase(), 'latin1'), Buffer.from([0x03])]);
}

describe('an RDM6300-style reader (format: rdm6300)', () => {
  it('one grant per presentation however often the module repeats; a bad checksum decides nothing', async () => {
    const dir = join(tmp.path, 'r0');
    mkdirSync(dir);
    const config = writeConfig(dir, {
      id: 'rdm',
      access: '{ groups: [Staff] }',
      doorExtra: `    unlockSeconds: 1\n    reader: { path: ${dir}/reader, format: rdm6300 }\n`,
    });
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const pty = new PtyPair(join(dir, 'reader'), join(dir, 'terminal'));
    await pty.plugIn();
    const daemon = new Daemon(config);
    running.push({ daemon, pty });
    await daemon.waitForMessage('reader connected');
    const events = () =>
      runCli(['events', '--config', config])
        .stdout.trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e.type !== 'config_changed' && e.type !== 'audit_chain_started'); // the door's events, not what the start recorded (its configuration, the audit chain's start)

    // Alice's card held to the reader for a second: the module sends its frame every 50 ms.
    for (let i = 0; i < 20; i++) {
      pty.write(frame('1A00404B4A'));
      await sleep(50);
    }
    await waitUntil(() => readLevel(join(dir, 'gpio/gpio17/value')) === '0' && events().some((e) => e.type === 'locked'), 8000, 'unlocked and relocked');
    pty.write(frame('1A00404B4B', 0x00)); // Bob's card, corrupted on the wire
    await daemon.waitForMessage('reader noise dropped');
    pty.write(frame('1A00404B4B'));
    await waitUntil(() => events().some((e) => e.type === 'access_denied'), 5000, 'Bob refused');
    expect(events().map((e) => [e.type, e.reason ?? null])).toEqual([
      ['access_granted', null],
      ['unlocked', null],
      ['locked', null],
      ['access_denied', 'user_suspended'],
    ]);
  });
});
