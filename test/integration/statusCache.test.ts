import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';

const tmp = tempDir('door-agent-status-cache-');
afterAll(tmp.cleanup);
let n = 0;

function agent(extra = ''): { dir: string; config: string } {
  const dir = join(tmp.path, `a${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), 'dak_test-key\n');
  return { dir, config: writeConfig(dir, { id: 'st', access: '{ groups: [Staff] }', extra }) };
}

describe('door-agent status and the cache', () => {
  it('without a cache: the doors and the daemon are still reported, a warning says what it means, exit 1 (text and --json)', () => {
    const a = agent();
    const r = runCli(['status', '--config', a.config]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stdout).toContain('daemon: not running');
    expect(r.stdout).toContain(`(${DOOR_UUID}): LOCKED`);
    expect(r.stdout).toContain('cache: 0 users, 0 credentials, 0 guest links; never imported or synced');
    expect(r.stdout).toContain(
      `WARNING: no cache at ${join(a.dir, 'data', 'cache.db')}: every card, PIN and guest link is refused until door-agent sync (or import) provisions it`,
    );
    const json = runCli(['status', '--json', '--config', a.config]);
    expect(json.status).toBe(1);
    expect((JSON.parse(json.stdout) as { cacheExists: boolean }).cacheExists).toBe(false);
    expect(existsSync(join(a.dir, 'data', 'cache.db'))).toBe(false); // status writes nothing into the data directory
  });

  describe('after a sync', () => {
    let server: Server;
    let port = 0;
    beforeAll(async () => {
      server = createServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        res.setHeader('content-type', 'application/json');
        if (url.pathname === '/multipleusers')
          return void res.end(JSON.stringify([{ email_id: 1, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: 'a@example.org' }]));
        if (url.pathname === '/user') return void res.end(JSON.stringify({ policies: [], smartcards: [{ number: '5000001' }] }));
        res.statusCode = 404;
        res.end('{"error":"no"}');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise((r) => server.close(r)));

    it('says when it synced (not "never imported or synced"), in the singular for one of each, and exits 0', async () => {
      const a = agent(`service: { baseUrl: "http://127.0.0.1:${port}", apiKeyFile: ${join(tmp.path, `a${n}`)}/api-key, startDelaySeconds: 0 }`);
      const synced = await runCliAsync(['sync', '--config', a.config]);
      expect(synced.status, synced.stderr).toBe(0);
      const r = runCli(['status', '--config', a.config]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/cache: 1 user, 1 credential, 0 guest links; last sync \d{4}-\d\d-\d\dT[\d:.]+Z\n/);
      expect(r.stdout).not.toContain('never imported or synced');
      expect(r.stdout).not.toContain('WARNING: no cache');
      // The seed's calls (no GET /directory): a full sync, its duration and its bytes (uncompressed here).
      expect(r.stdout).toMatch(/\nlast sync: full \(GET \/multipleusers and GET \/user\), \d+\.\d s, \d+ bytes on the wire \(not compressed\)\n/);
      const json = JSON.parse(runCli(['status', '--json', '--config', a.config]).stdout) as { sync: { last: Record<string, unknown> } };
      expect(json.sync.last).toMatchObject({ kind: 'full', mode: 'lists', durationMs: expect.any(Number), wireBytes: expect.any(Number) });
      expect(json.sync.last.wireBytes).toBe(json.sync.last.bodyBytes);
    });
  });
});
