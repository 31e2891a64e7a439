import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, ROOT, tempDir } from '../support/cli.js';

// A real full disk: an 8 MiB tmpfs in a private mount namespace (needs root, as CI and `npm test` run here;
// elsewhere: sudo npm test). The scenario itself is test/support/diskFullScenario.mjs, on the built modules.
const tmp = tempDir('door-agent-diskfull-');
afterAll(tmp.cleanup);

describe('a full disk', () => {
  it('a LOCK on a full disk never comes back as the hold-open after a restart, and no event is lost', () => {
    const data = join(tmp.path, 'data');
    const gpio = join(tmp.path, 'gpio');
    mkdirSync(data);
    const script = join(ROOT, 'test/support/diskFullScenario.mjs');
    const run = spawnSync(
      'unshare',
      [
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount -t tmpfs -o size=8m tmpfs "$1" && exec "$2" "$3" "$1" "$4" "$5"',
        'sh',
        data,
        process.execPath,
        script,
        gpio,
        DOOR_UUID,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(run.status, `the disk-full test mounts a tmpfs in a private mount namespace and needs root (unshare from util-linux):\n${run.stderr}`).toBe(0);
    const result = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(result.savedBeforeFull).toBe('UNLOCKED'); // the hold-open was on disk: the lock had it to undo
    expect(result.fillError).toBe('ENOSPC');
    expect(result.relayAfterLock).toBe(0);
    expect(result.resumedState).toBe('LOCKED');
    expect(result.relayAfterRestart).toBe(0);
    expect(result.flushed).toBe(true);
    const events = result.events as string[];
    expect(events).toHaveLength(203); // the audit chain's first record, then the door's 202
    expect([events[0], events[1], events.at(-1)]).toEqual(['audit_chain_started', 'unlocked', 'locked']);
  });
});
