import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';

// Whether V8 optimized a function that stands for the tap path (a few calls' worth of bytecode, called 300 times),
// in a node process of its own that imports the daemon's module as built, tuned by it or not. V8's status bits:
// 1 << 6 is "TurboFan code". Synchronous compiles, so the answer does not depend on the machine's load.
function optimizedAfterTaps(tune: boolean): { turbofan: boolean; status: number; stderr: string } {
  const module = join(ROOT, 'dist/src/system/v8Tiering.js');
  const script = `
    const { tuneTieringForTaps } = await import(${JSON.stringify(module)});
    if (${tune}) tuneTieringForTaps();
    function decide(a, b) {
      let s = 0;
      for (let i = 0; i < 3; i++) { s += (a * i + b) % 7; if (s > 100) s -= 50; }
      return { s, a, b, ok: s % 2 === 0 };
    }
    let n = 0;
    for (let i = 0; i < 300; i++) n += decide(i, 3).s;
    console.log(%GetOptimizationStatus(decide), n);
  `;
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--no-concurrent-recompilation', '--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const status = Number(r.stdout.split(' ')[0]);
  return { turbofan: (status & (1 << 6)) !== 0, status, stderr: r.stderr };
}

describe("the daemon's V8 tiering (src/system/v8Tiering.ts, bench/HISTORY.md 'The tap path')", () => {
  it('a function run a few hundred times, as the tap path is over a day, is optimized once tuned, and was not before', () => {
    const before = optimizedAfterTaps(false);
    expect(before.turbofan, `status ${before.status}`).toBe(false);
    const tuned = optimizedAfterTaps(true);
    expect(tuned.turbofan, `status ${tuned.status}`).toBe(true);
    // The flag is this Node's own: no "unrecognized flag" warning.
    expect(tuned.stderr).toBe('');
  });
});
