import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, tempDir } from '../support/cli.js';
import { waitUntil } from '../support/daemon.js';

// `npm start` as a newcomer sees it: the demo in a real terminal (tmux), cards typed at the keyboard.
const tmp = tempDir('door-agent-demo-');
const session = `door-agent-demo-${process.pid}`;
const tmux = (...args: string[]) => {
  const r = spawnSync('tmux', args, { encoding: 'utf8' });
  if (r.error) throw new Error(`tmux is needed for the demo test: apt-get install tmux (${r.error.message})`);
  return r.stdout;
};
afterAll(() => {
  tmux('kill-session', '-t', session);
  tmp.cleanup();
});

describe('door-agent demo (npm start)', () => {
  it('starts everything, decides typed cards and PINs, answers a remote unlock, and stops cleanly on Ctrl-C', async () => {
    tmux(
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      '220',
      '-y',
      '60',
      `cd ${ROOT} && node ${CLI} demo --dir ${join(tmp.path, 'demo')}; echo DEMO-EXITED $?; sleep 60`,
    );
    const screen = () => tmux('capture-pane', '-t', session, '-p', '-J', '-S', '-200');
    await waitUntil(() => screen().includes('Ctrl-C stops everything.'), 30_000, 'the demo is ready');
    await waitUntil(() => screen().includes('guest link 1 received'), 10_000, 'the guest link reached the door over MQTT');
    tmux('send-keys', '-t', session, '4213578', 'Enter');
    await waitUntil(() => screen().includes('GRANTED  card …78'), 5000, 'Alice granted');
    // Printed from the next log line, which may reach the terminal a moment after the decision's.
    await waitUntil(() => /door UNLOCKED \(card …78\), relocks at/.test(screen()), 5000, 'the door unlocked');
    tmux('send-keys', '-t', session, '4213579', 'Enter');
    await waitUntil(() => screen().includes('DENIED   card …79: user_suspended'), 5000, 'Bob denied');
    tmux('send-keys', '-t', session, '1234#', 'Enter');
    await waitUntil(() => screen().includes('GRANTED  PIN'), 5000, 'the PIN');

    // The printed curl line works as printed.
    const curl = screen()
      .split('\n')
      .find((l) => l.includes('/setlockstatus'))!
      .trim();
    const r = spawnSync('sh', ['-c', curl], { encoding: 'utf8' });
    expect(r.stdout).toBe('{"success":"Front door unlocked for 5 s"}');

    // The printed suspension line: Alice's card is refused within 2 s (the change is pushed, no 300 s wait).
    const suspend = screen()
      .split('\n')
      .find((l) => l.includes('/togglesuspension'))!
      .trim();
    expect(spawnSync('sh', ['-c', suspend], { encoding: 'utf8' }).status).toBe(0);
    const suspendedAt = Date.now();
    const refused = async () => {
      tmux('send-keys', '-t', session, '4213578', 'Enter');
      await new Promise((r) => setTimeout(r, 200));
      return screen().includes('DENIED   card …78: user_suspended');
    };
    while (!(await refused())) if (Date.now() - suspendedAt > 10_000) throw new Error('Alice not refused within 10 s of the suspension');
    expect(Date.now() - suspendedAt).toBeLessThan(5000);

    tmux('send-keys', '-t', session, 'C-c');
    await waitUntil(() => screen().includes('DEMO-EXITED 0'), 10_000, 'a clean exit');
    expect(screen()).toContain('stopping the demo: door locked, broker and service closed');
  });

  it('a Ctrl-C while it starts (before its banner) stops it cleanly: exit 0, nothing killed mid-way', async () => {
    const dir = join(tmp.path, 'early-stop');
    const demo = spawn(process.execPath, [CLI, 'demo', '--dir', dir], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: 'UTC' } });
    let out = '';
    demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
    demo.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    // The marker is the demo's first write: it is starting, its broker and service not up yet.
    await waitUntil(() => existsSync(join(dir, '.door-agent-demo')) || demo.exitCode !== null, 30_000, 'the demo starts');
    demo.kill('SIGINT');
    expect(await exited, out).toBe(0);
    expect(out).toContain('stopping the demo: door locked, broker and service closed');
  }, 60_000);
});
