import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttps, type Server as HttpsServer } from 'node:https';
import { createServer as createTcp, type Server as TcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { Daemon } from '../support/daemon.js';
import { freePort } from '../support/net.js';

// An unreachable service, as `door-agent sync` and the daemon's log say it: the URL and the cause, each against a
// real listener on the loopback (or a name that cannot resolve), never a mocked fetch.

const tmp = tempDir('door-agent-unreachable-');
afterAll(tmp.cleanup);
let n = 0;

function openssl(cwd: string, args: string[]): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed (apt-get install openssl): ${r.stderr ?? r.error}`);
}

/** A self-signed certificate: `name` in its subjectAltName, valid now, or long expired (made with `openssl ca`). */
function certificate(name: string, options: { expired?: boolean } = {}): { key: string; cert: string } {
  const dir = join(tmp.path, `cert${n++}`);
  mkdirSync(dir);
  const san = /^[\d.]+$/.test(name) ? `IP:${name}` : `DNS:${name}`;
  if (!options.expired) {
    openssl(dir, [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'key.pem',
      '-out',
      'cert.pem',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      `subjectAltName=${san}`,
    ]);
  } else {
    writeFileSync(
      join(dir, 'ca.cnf'),
      '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\ncopy_extensions=copy\n[p]\ncommonName=supplied\n',
    );
    writeFileSync(join(dir, 'index.txt'), '');
    writeFileSync(join(dir, 'serial'), '01\n');
    openssl(dir, [
      'req',
      '-new',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'key.pem',
      '-out',
      'req.csr',
      '-subj',
      `/CN=${name}`,
      '-addext',
      `subjectAltName=${san}`,
    ]);
    openssl(dir, [
      'ca',
      '-batch',
      '-config',
      'ca.cnf',
      '-selfsign',
      '-keyfile',
      'key.pem',
      '-in',
      'req.csr',
      '-out',
      'cert.pem',
      '-notext',
      '-startdate',
      '20200101000000Z',
      '-enddate',
      '20200102000000Z',
    ]);
  }
  return { key: join(dir, 'key.pem'), cert: join(dir, 'cert.pem') };
}

async function httpsServer(files: { key: string; cert: string }): Promise<{ server: HttpsServer; port: number }> {
  const server = createHttps({ key: readFileSync(files.key), cert: readFileSync(files.cert) }, (_req, res) => res.end('[]'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, port: (server.address() as { port: number }).port };
}

function agentConfig(baseUrl: string, extra = ''): string {
  const dir = join(tmp.path, `a${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), 'dak_test-key\n');
  return writeConfig(dir, {
    id: 'un',
    access: '{ groups: [Staff] }',
    extra: `service: { baseUrl: "${baseUrl}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 1${extra} }`,
  });
}

async function syncError(baseUrl: string, env: Record<string, string> = {}): Promise<string> {
  const r = await runCliAsync(['sync', '--config', agentConfig(baseUrl)], { env });
  expect(r.status, r.stderr).toBe(1);
  expect(r.stderr).toContain('sync failed, the cache is unchanged: GET /directory: ');
  return r.stderr;
}

describe('door-agent sync names the URL and the cause when the service cannot be reached', () => {
  const servers: Array<HttpsServer | TcpServer> = [];
  const sockets: Socket[] = [];
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  it('nothing listening: connection refused at host:port', async () => {
    const port = await freePort();
    const err = await syncError(`http://127.0.0.1:${port}`);
    expect(err).toContain(`cannot reach http://127.0.0.1:${port}/: connection refused: nothing is listening at 127.0.0.1:${port}`);
  });

  it('a host name that does not resolve: DNS, the name', async () => {
    const err = await syncError('http://nonexistent.invalid:8080');
    expect(err).toMatch(
      /cannot reach http:\/\/nonexistent\.invalid:8080\/: the host name nonexistent\.invalid (does not resolve \(DNS: ENOTFOUND\)|could not be resolved now \(DNS: EAI_AGAIN)/,
    );
  });

  it('TLS, a self-signed certificate: not trusted, and how to trust it', async () => {
    const { server, port } = await httpsServer(certificate('127.0.0.1'));
    servers.push(server);
    const err = await syncError(`https://127.0.0.1:${port}`);
    expect(err).toContain(
      `cannot reach https://127.0.0.1:${port}/: TLS: the service's certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate)`,
    );
    expect(err).toContain('NODE_EXTRA_CA_CERTS');
  });

  it('TLS, a trusted certificate for another name: hostname mismatch', async () => {
    const files = certificate('door.example');
    const { server, port } = await httpsServer(files);
    servers.push(server);
    const err = await syncError(`https://127.0.0.1:${port}`, { NODE_EXTRA_CA_CERTS: files.cert });
    expect(err).toContain(`cannot reach https://127.0.0.1:${port}/: TLS: the service's certificate is not for 127.0.0.1 (hostname mismatch: `);
  });

  it('TLS, an expired certificate: expired', async () => {
    const { server, port } = await httpsServer(certificate('127.0.0.1', { expired: true }));
    servers.push(server);
    const err = await syncError(`https://127.0.0.1:${port}`);
    expect(err).toContain(`cannot reach https://127.0.0.1:${port}/: TLS: the service's certificate has expired (CERT_HAS_EXPIRED)`);
  });

  it('a listener that never answers: no answer within N s', async () => {
    const server = createTcp((s) => void sockets.push(s));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const err = await syncError(`http://127.0.0.1:${port}`);
    expect(err).toContain(`GET /directory: no answer from http://127.0.0.1:${port}/ within 1 s (service.timeoutSeconds)`);
  });

  it('a port fetch would refuse (9, discard) is tried like any other: nothing listening there is a refused connection', async () => {
    const err = await syncError('http://127.0.0.1:9');
    expect(err).toContain('cannot reach http://127.0.0.1:9/: connection refused: nothing is listening at 127.0.0.1:9');
  });
});

describe("the daemon's sync log line names the URL and the cause", () => {
  let port = 0;
  beforeAll(async () => {
    port = await freePort();
  });

  it('connection refused, in the sync failed warning', async () => {
    const daemon = new Daemon(agentConfig(`http://127.0.0.1:${port}`, ', syncIntervalSeconds: 60'));
    try {
      const line = await daemon.waitForMessage('sync failed; the cache is unchanged', 30_000);
      expect((line.err as { message: string }).message).toContain(
        `cannot reach http://127.0.0.1:${port}/: connection refused: nothing is listening at 127.0.0.1:${port}`,
      );
    } finally {
      await daemon.stop('SIGKILL');
    }
  });
});
