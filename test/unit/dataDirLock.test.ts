import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirBusyError, DataDirUnwritableError, dataDirHolder, lockDataDir } from '../../src/system/dataDirLock.js';
import { dataDirWriteProblem } from '../../src/commands/dataDirAccess.js';
import { tempDir } from '../support/cli.js';

// The data directory's lock on real files (two connections in one process conflict as two processes do;
// test/integration/dataDirLock.test.ts has two real daemons and a SIGKILL).
const tmp = tempDir('door-agent-lockunit-');
afterAll(tmp.cleanup);
const options = { pid: process.pid, create: true, unwritableExitCode: 78, doing: 'this one exits' };

describe('lockDataDir', () => {
  it('creates the directory, records the pid, refuses a second taker naming it, and is free again once released', () => {
    const dir = join(tmp.path, 'a/data');
    expect(dataDirHolder(dir)).toBeNull(); // no lock file yet
    const lock = lockDataDir(dir, options);
    expect(readFileSync(join(dir, 'daemon.pid'), 'utf8')).toBe(`${process.pid}\n`);
    expect(dataDirHolder(dir)).toEqual({ pid: process.pid });
    let refused: unknown;
    try {
      lockDataDir(dir, { ...options, pid: 1 });
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(DataDirBusyError);
    expect((refused as Error).message).toContain(`another door-agent (pid ${process.pid}) is running on the data directory ${dir}; this one exits`);
    expect(readFileSync(join(dir, 'daemon.pid'), 'utf8')).toBe(`${process.pid}\n`); // the refused one wrote nothing
    lock.release();
    expect(dataDirHolder(dir)).toBeNull();
    lockDataDir(dir, options).release();
  });

  it('a path through a file is unwritable (ENOTDIR), with the exit code asked for', () => {
    writeFileSync(join(tmp.path, 'plain-file'), 'x');
    const dir = join(tmp.path, 'plain-file/data');
    expect(() => lockDataDir(dir, options)).toThrow(DataDirUnwritableError);
    expect(() => lockDataDir(dir, options)).toThrow(
      /the data directory .*plain-file\/data is not writable by user .* \(ENOTDIR\): a part of that path is a file/,
    );
    const thrown = (() => {
      try {
        lockDataDir(dir, { ...options, unwritableExitCode: 5 });
      } catch (err) {
        return err;
      }
    })();
    expect(thrown).toMatchObject({ exitCode: 5, code: 'ENOTDIR', path: dir });
  });

  it('without create, a missing directory is not made', () => {
    const dir = join(tmp.path, 'never-made');
    expect(() => lockDataDir(dir, { ...options, create: false })).toThrow(/cannot use the data directory/);
    mkdirSync(dir);
    lockDataDir(dir, { ...options, create: false }).release();
  });
});

describe('dataDirWriteProblem (for config check: what run would say)', () => {
  it("null for a writable or a not yet made directory; run's own message for one it would refuse", () => {
    expect(dataDirWriteProblem(tmp.path)).toBeNull();
    expect(dataDirWriteProblem(join(tmp.path, 'not/made/yet'))).toBeNull();
    writeFileSync(join(tmp.path, 'a-file'), 'x');
    expect(dataDirWriteProblem(join(tmp.path, 'a-file/data'))).toMatch(/^the data directory .*a-file\/data is not writable by user .* \(ENOTDIR\)/);
  });
});
