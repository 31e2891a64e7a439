import { get as getHttp, type IncomingMessage } from 'node:http';
import { get as getHttps } from 'node:https';

/**
 * One GET over node:http(s), resolving with the answer as soon as its head arrives; its body is read by iterating
 * the message, as the bytes came over the wire (still compressed: decodedBody.ts undoes the Content-Encoding, so
 * the client can count both and bound the decompression). fetch would decompress on its own, hiding the size
 * received and the decoder's errors. Redirects are not followed (a 3xx is an answer like any other). Aborting
 * `signal` ends the request, also while the body is being read. TLS trusts what Node.js trusts (and
 * NODE_EXTRA_CA_CERTS). A failure to connect rejects with the system's or TLS's own error (code, hostname, reason).
 */
export function httpGet(url: URL, headers: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const get = url.protocol === 'https:' ? getHttps : getHttp;
    const request = get(url, { headers, signal }, resolve);
    request.on('error', reject);
  });
}
