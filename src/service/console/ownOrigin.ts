import { isIP } from 'node:net';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isWildcardHost, splitListen } from '../../util/listenAddress.js';

const isLoopback = (address: string) => address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');

/** An origin as a browser serializes it (the default port left out), or null when `text` is no URL. */
function originOf(text: string): string | null {
  try {
    const origin = new URL(text).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

/**
 * Where the console is opened, told from configuration and the listening socket only, never from a request's
 * headers (issue 51 item 1: `Host` is the client's to choose): `server.publicUrl` when it is set; else the address
 * the service listens on (http or https as it really serves; a loopback address also as `localhost`; the host name
 * of `server.listen` when it is one). A service on every address without a public URL has no origin to tell.
 */
export class ConsoleOrigin {
  private readonly publicOrigin: string | null;

  constructor(
    private readonly app: FastifyInstance,
    publicUrl: string | undefined,
    private readonly listen: string | undefined,
  ) {
    this.publicOrigin = publicUrl === undefined ? null : originOf(publicUrl);
  }

  /** The origins a console form may be posted from, or why none can be told. */
  allowed(): { origins: string[] } | { problem: string } {
    if (this.publicOrigin !== null) return { origins: [this.publicOrigin] };
    const scheme = this.app.server instanceof TlsServer ? 'https' : 'http';
    const bound = this.app.addresses().filter((a) => typeof a !== 'string');
    const named = this.listen === undefined ? null : splitListen(this.listen).host;
    if ((named !== null && isWildcardHost(named)) || bound.some((a) => isWildcardHost(a.address))) {
      return {
        problem: `the service listens on every address (server.listen ${this.listen ?? ''}), so it cannot tell the address the console is opened at: set server.publicUrl to it (e.g. https://doors.example.org)`,
      };
    }
    const origins = new Set<string>();
    for (const { address, family, port } of bound) {
      const at = (host: string) => originOf(`${scheme}://${host}:${port}`);
      for (const host of [family === 'IPv6' ? `[${address}]` : address, isLoopback(address) ? 'localhost' : null, named && isIP(named) === 0 ? named : null]) {
        const origin = host === null ? null : at(host);
        if (origin !== null) origins.add(origin);
      }
    }
    if (origins.size === 0) return { problem: 'the service is not listening yet, so it cannot tell its own address: set server.publicUrl' };
    return { origins: [...origins] };
  }

  /**
   * Why a POST is refused as not from a console page of this site (its Origin, else its Referer, compared with the
   * origins above), or null when it is from one.
   */
  refusal(request: FastifyRequest): string | null {
    const allowed = this.allowed();
    if ('problem' in allowed) return `refused: ${allowed.problem}`;
    const given = request.headers.origin;
    const referer = request.headers.referer;
    const from = typeof given === 'string' && given !== 'null' ? originOf(given) : typeof referer === 'string' ? originOf(referer) : null;
    if (from !== null && allowed.origins.includes(from)) return null;
    const where = allowed.origins.join(' or ');
    return this.publicOrigin !== null
      ? `refused: this form was not sent from a console page of this site (${where}, server.publicUrl)`
      : `refused: this form was not sent from a console page of this site (${where}); if operators open the console at another address (a proxy, a host name), set server.publicUrl to it`;
  }

  /** An absolute URL of a console path for a mail, from server.publicUrl only; null without one. */
  link(pathAndQuery: string): string | null {
    return this.publicOrigin === null ? null : `${this.publicOrigin}${pathAndQuery}`;
  }

  /** Whether the console is served over TLS: the connection is, or the public URL is https (a TLS proxy in front). */
  secure(request: FastifyRequest): boolean {
    return this.publicOrigin?.startsWith('https:') === true || (request.raw.socket as TLSSocket).encrypted === true;
  }
}
