import { type IncomingHttpHeaders, request } from 'node:http';
import { createServer } from 'node:net';

/** A TCP port free on the loopback address right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body's bytes as sent (not decompressed). */
  body: Buffer;
}

/** A GET on loopback with Node's own client, which sends no header it is not given and decompresses nothing. */
export function rawGet(port: number, path: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  return rawRequest(port, 'GET', path, headers);
}

/** A request on loopback as curl would send it: exactly the headers given (Host included), and `body` if any. */
export function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end(body);
  });
}
