import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openServiceDatabase } from '../../src/service/database.js';
import { tempDir } from '../support/cli.js';

const tmp = tempDir('door-agent-servicedb-');
afterAll(tmp.cleanup);

describe("the reference service's database", () => {
  it('a service.db that is not SQLite is left untouched, and the message never advises deleting it', () => {
    const file = join(tmp.path, 'service.db');
    const precious = "the only copy of somebody's users\n".repeat(200);
    writeFileSync(file, precious);
    let message = '';
    try {
      openServiceDatabase(file);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(`${file} is not a readable SQLite database`);
    expect(message).toContain('restore the file from your backup');
    expect(message).not.toMatch(/move .* aside|delete|import again/i);
    expect(readFileSync(file, 'utf8')).toBe(precious);
  });

  it('creates a new database owner-only and migrates it', () => {
    const db = openServiceDatabase(join(tmp.path, 'new', 'service.db'));
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThan(0);
    db.close();
  });
});
