import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';

/** What one POST to a receiver came to: its status, or no answer and why; and how long it took. */
export interface SendOutcome {
  status: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * One POST of a delivery to `url`, connected to `address` (the one the SSRF guard checked: webhookAddress.ts),
 * whatever the name resolves to now; the Host header and TLS's server name stay the URL's host. No redirect is
 * followed (a 3xx is not a 2xx: retried). Given up after `timeoutMs` without a whole answer's head.
 */
export function postDelivery(
  url: URL,
  target: { address: string; family: 4 | 6 },
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  now: () => number,
  signal?: AbortSignal,
): Promise<SendOutcome> {
  const started = now();
  // Every connection of this request goes to the address checked (net calls it with all: true under autoSelectFamily).
  const lookup: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    const finish = (status: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, error, durationMs: Math.max(0, Math.round(now() - started)) });
    };
    const req = send(
      url,
      {
        method: 'POST',
        headers: Object.assign({}, headers, { 'content-length': String(Buffer.byteLength(body)) }),
        lookup,
        agent: false,
      },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        // The body is not read for anything: drained so the socket closes cleanly.
        res.resume();
        res.on('error', () => undefined);
        if (status >= 200 && status < 300) finish(status, null);
        else if (status >= 300 && status < 400)
          finish(status, `answered ${status}: a redirect (to ${String(res.headers.location ?? 'nowhere')}), not followed`);
        else finish(status, `answered ${status}`);
        req.destroy();
      },
    );
    const timer = setTimeout(() => {
      finish(null, `no answer within ${Math.round(timeoutMs / 1000)} s`);
      req.destroy();
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => finish(null, connectionError(err, target.address)));
    signal?.addEventListener('abort', () => {
      finish(null, 'stopped: the service is stopping');
      req.destroy();
    });
    req.end(body);
  });
}

/** A failed connection in words. */
function connectionError(err: NodeJS.ErrnoException, address: string): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return `connection refused by ${address}`;
    case 'ECONNRESET':
      return `connection reset by ${address}`;
    case 'ETIMEDOUT':
      return `connection to ${address} timed out`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${address} cannot be reached`;
    default:
      return err.code?.startsWith('ERR_TLS') || err.code?.includes('CERT') ? `TLS: ${err.message}` : err.message;
  }
}
