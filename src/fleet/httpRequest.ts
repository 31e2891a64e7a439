import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * One request to the service (enrolment or the exchange), answered when its headers arrive. `idleMs`: given up
 * when nothing arrives for that long (a download's pace), beside `signal`'s bound on the whole call.
 */
export function sendRequest(
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: Buffer | undefined,
  options: { signal?: AbortSignal; idleMs?: number } = {},
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const { signal, idleMs } = options;
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      signal === undefined ? { method, headers } : { method, headers, signal },
      resolve,
    );
    if (idleMs !== undefined) {
      request.setTimeout(idleMs, () => request.destroy(new Error(`nothing received for ${idleMs / 1000} s (service.timeoutSeconds)`)));
    }
    request.on('error', reject);
    request.end(payload);
  });
}

/** An answer's body as text, at most `maxBytes` (the connection is dropped past them: `tooBig` is thrown). */
export async function readText(response: IncomingMessage, maxBytes: number, tooBig: (message: string) => Error): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      response.destroy();
      throw tooBig(`the answer is over ${maxBytes} bytes: not read`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
