import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver took: its headers (lower-case names) and its body's text. */
export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A webhook receiver on a free loopback port (a real HTTP server): it keeps each request and answers with the
 * next of `statuses` (the last one again once they run out), or never (`hang`: the request stays open until close).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Requests taken and not answered (`hang`). */
  readonly open = new Set<ServerResponse>();
  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly answers: { statuses: number[]; hang: boolean },
  ) {}

  static async start(answers: { statuses?: number[]; hang?: boolean } = {}): Promise<WebhookReceiver> {
    const config = { statuses: [...(answers.statuses ?? [200])], hang: answers.hang ?? false };
    let receiver: WebhookReceiver | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        receiver!.received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        if (config.hang) {
          receiver!.open.add(response);
          response.on('close', () => receiver!.open.delete(response));
          return;
        }
        const status = config.statuses.length > 1 ? config.statuses.shift()! : config.statuses[0]!;
        response.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'thanks' : 'not now');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new WebhookReceiver(server, (server.address() as AddressInfo).port, config);
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** From now on every request is answered `status`. */
  answerWith(status: number): void {
    this.answers.statuses.splice(0, this.answers.statuses.length, status);
    this.answers.hang = false;
  }

  async close(): Promise<void> {
    for (const response of this.open) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
