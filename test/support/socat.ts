import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { stopChild } from './process.js';
import { sleep } from './wait.js';

function requireSocat(): void {
  const probe = spawnSync('socat', ['-V'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error('socat is required for the serial reader tests: apt-get install socat (npm test installs it when run as root)');
  }
}

async function waitForPath(path: string, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!existsSync(path)) {
    if (Date.now() - started > timeoutMs) throw new Error(`socat did not create ${path} within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/**
 * A real serial line: a socat pty pair. The agent opens `devicePath` as its reader; the test writes what a
 * reader would send into `terminalPath`. unplug() destroys the pair (both paths vanish), plugIn() recreates it.
 */
export class PtyPair {
  private process: ChildProcess | null = null;

  constructor(
    readonly devicePath: string,
    readonly terminalPath: string,
  ) {
    requireSocat();
  }

  async plugIn(): Promise<void> {
    this.process = spawn('socat', [`pty,raw,echo=0,link=${this.devicePath}`, `pty,raw,echo=0,link=${this.terminalPath}`], {
      stdio: 'ignore',
    });
    await waitForPath(this.devicePath, 5000);
    await waitForPath(this.terminalPath, 5000);
  }

  async unplug(): Promise<void> {
    const proc = this.process;
    this.process = null;
    await stopChild(proc);
  }

  /** Writes bytes as the reader would send them. */
  write(data: string | Buffer): void {
    const fd = openSync(this.terminalPath, 'w');
    try {
      writeSync(fd, typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
    } finally {
      closeSync(fd);
    }
  }
}
