import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStateDatabase } from '../../src/store/database.js';
import { EventLog } from '../../src/store/eventLog.js';
import { CLI, DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { exampleSnapshot, writeSnapshot } from '../support/snapshot.js';

// Issue 32 item 10: a reader that goes away (door-agent events | head -n 2) is not a failure: the command stops
// quietly, exit 0, no EPIPE stack trace on stderr.
const tmp = tempDir('door-agent-pipes-');
afterAll(tmp.cleanup);

let config: string;
const AT0 = Date.parse('2026-11-24T09:00:00.000Z');

beforeAll(() => {
  const dir = join(tmp.path, 'site');
  mkdirSync(dir);
  config = writeConfig(dir);
  expect(runCli(['import', writeSnapshot(tmp.path, 'snapshot.json', exampleSnapshot()), '--config', config]).status).toBe(0);
  // More than a pipe holds (64 KiB), so the reader is gone while door-agent is still writing.
  const db = openStateDatabase(join(dir, 'data/state.db'));
  const log = new EventLog(db, { agentId: 'test-agent', maxEvents: 100_000 });
  db.transaction(() => {
    for (let i = 1; i <= 5000; i++)
      log.append({ type: 'access_denied', door: DOOR_UUID, at: AT0 + i, data: { kind: 'card', hint: '…', reason: 'unknown_credential', i } });
  })();
  db.close();
});

/** Runs a bash pipeline with pipefail: its status is door-agent's whenever the reader side exits 0. */
function pipeline(script: string) {
  const r = spawnSync('bash', ['-o', 'pipefail', '-c', script, 'bash', process.execPath, CLI, config, tmp.path], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.error) throw r.error;
  return r;
}

/**
 * door-agent ARGS with a reader that closes its end before door-agent starts (so even a short output meets a
 * closed pipe, whatever the machine's load).
 */
function intoClosedPipe(args: string, flag: string) {
  return pipeline(`rm -f "$4/${flag}"; (until [ -e "$4/${flag}" ]; do sleep 0.02; done; exec "$1" "$2" ${args} --config "$3") | (exec 0<&-; : > "$4/${flag}")`);
}

describe('door-agent into a pipe whose reader goes away', () => {
  it('events | head -n 2: two events out, door-agent exits 0, nothing on stderr', () => {
    const r = pipeline('"$1" "$2" events --config "$3" | head -n 2');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { seq: number }).seq),
    ).toEqual([1, 2]);
  });

  it('events --follow | head -n 2 stops too (exit 0) instead of following for ever', () => {
    const started = Date.now();
    const r = pipeline('"$1" "$2" events --follow --config "$3" | head -n 2');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('status (and status --json) into a closed pipe: exit 0, no stack trace', () => {
    for (const [args, flag] of [
      ['status', 'a'],
      ['status --json', 'b'],
    ] as const) {
      const r = intoClosedPipe(args, flag);
      expect(r.stderr, args).toBe('');
      expect(r.status, args).toBe(0);
    }
  });

  it('demo | head -n 2: the demo stops as on Ctrl-C (door locked, broker and service closed), exit 0', () => {
    const r = pipeline('"$1" "$2" demo --dir "$4/demo" </dev/null | head -n 2');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('door-agent demo');
  });

  it('config check and check into a closed pipe: exit 0, no stack trace', () => {
    for (const [args, flag] of [
      ['config check', 'c'],
      ['check 0004213578', 'd'],
    ] as const) {
      const r = intoClosedPipe(args, flag);
      expect(r.stderr, args).toBe('');
      expect(r.status, args).toBe(0);
    }
  });
});
