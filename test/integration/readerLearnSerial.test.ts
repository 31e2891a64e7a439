import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { PtyPair } from '../support/socat.js';
import { sleep } from '../support/wait.js';

// `door-agent reader learn` (the built CLI) on a serial reader: a socat pty pair stands for the reader's line, the
// test writes the card line a reader sends into the other end until the command has read one.
const tmp = tempDir('door-agent-learn-serial-');
afterAll(tmp.cleanup);
const ptys: PtyPair[] = [];
afterEach(async () => {
  for (const pty of ptys.splice(0)) await pty.unplug();
});

describe('reader learn on a serial reader (pty)', () => {
  it('prints the next card line the reader sends, exit 0; a reader that sends nothing: exit 1', async () => {
    const dir = join(tmp.path, 'serial');
    mkdirSync(dir);
    const pty = new PtyPair(join(dir, 'reader-agent'), join(dir, 'reader-wire'));
    ptys.push(pty);
    await pty.plugIn();
    const config = writeConfig(dir, { doorExtra: `    reader: { type: serial, path: ${pty.devicePath} }\n` });
    let done = false;
    const learning = runCliAsync(['reader', 'learn', '--config', config, '--timeout', '30']).finally(() => {
      done = true;
    });
    // The command opens the port a moment after it starts: the reader sends its card line until it has been read.
    while (!done) {
      pty.write('0004213578\r\n');
      await sleep(500);
    }
    const r = await learning;
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Front door: present a card to the reader');
    expect(r.stdout).toContain('card:          4213578'); // as the reader numbers it: leading zeros dropped

    const silent = await runCliAsync(['reader', 'learn', '--config', config, '--timeout', '1']);
    expect(silent.status).toBe(1);
    expect(silent.stderr).toContain('no card within 1 s');
  });
});
