import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../support/cli.js';

// The README's "Try it without hardware" block, pasted into a shell as a newcomer would: a serial line from socat,
// the daemon in the background, a card tapped as soon as the daemon says it is ready. Only its first line
// (`npm ci && npm run build`: this test runs on the build) is left out, and /tmp/ is a directory of the test's own.
const tmp = tempDir('door-agent-readme-');
let group: number | undefined;
afterAll(() => {
  // The block leaves socat and the daemon running in the background, as it does at a person's terminal.
  if (group !== undefined) {
    try {
      process.kill(-group, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  tmp.cleanup();
});

/** The first sh block under the heading "Try it without hardware" (whatever its level). */
function readmeBlock(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const heading = /^#+ Try it without hardware$/m.exec(readme);
  if (!heading) throw new Error('README.md has no "Try it without hardware" section');
  const block = /```sh\n([\s\S]*?)\n```/.exec(readme.slice(heading.index));
  return block![1]!.split('\n');
}

describe("README's Try it without hardware, pasted", () => {
  it('taps the card once the daemon is ready: unlocked, relocked when the door closes, and the tap in status and events', async () => {
    const lines = readmeBlock();
    expect(lines[0]).toMatch(/^npm ci && npm run build/);
    const script = lines.slice(1).join('\n').replaceAll('/tmp/', `${tmp.path}/`);
    const shell = spawn('bash', ['-c', script], { cwd: ROOT, detached: true, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: 'UTC' } });
    group = shell.pid;
    let out = '';
    let err = '';
    shell.stdout.on('data', (d: Buffer) => (out += d.toString()));
    shell.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => shell.once('exit', (c) => resolve(c)));
    const log = () => `stdout:\n${out}\nstderr:\n${err}\ndaemon log:\n${readFileSync(join(tmp.path, 'door.log'), 'utf8')}`;
    expect(code, log()).toBe(0);
    // The two `cat .../gpio17/value`: 1 after the tap (unlocked), 0 once the door was opened and closed.
    expect(
      out.split('\n').filter((l) => l === '0' || l === '1'),
      log(),
    ).toEqual(['1', '0']);
    expect(out).toContain('daemon: running');
    const events = out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { type: string });
    expect(
      events.map((e) => e.type),
      log(),
    ).toEqual(expect.arrayContaining(['access_granted', 'unlocked', 'locked']));
  }, 120_000);
});
