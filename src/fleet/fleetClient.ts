import type { IncomingMessage } from 'node:http';
import type * as z from 'zod';
import { fleetExchangeSchema, type FleetReport } from '../api/fleet.js';
import { DoorAgentError } from '../util/errors.js';
import { problemsInOneLine } from '../util/issues.js';
import { redactUrl } from '../util/redact.js';
import { parseRetryAfter } from '../util/retryAfter.js';
import { requestFailureReason } from '../util/requestErrors.js';
import { readText, sendRequest } from './httpRequest.js';

export type FleetExchange = z.infer<typeof fleetExchangeSchema>;

export interface FleetClientOptions {
  /** service.baseUrl */
  baseUrl: string;
  /** The agent's own DOOR key (service.apiKeyFile), read for each call: a key replaced on disk is used at once. */
  apiKey: () => string;
  /** service.apiKeyIn: header ("Authorization: Bearer KEY") or query (api_key=KEY). */
  apiKeyIn: 'header' | 'query';
  /** service.timeoutSeconds, in ms: the whole call, answer included. */
  timeoutMs: number;
}

/** A failed call to the service's fleet routes, naming the call and the status, with its Retry-After. */
export class FleetError extends DoorAgentError {
  constructor(
    message: string,
    readonly status: number | null,
    /** A 503 or 429 said when to come back (ms); null otherwise. */
    readonly retryAfterMs: number | null,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'FleetError';
  }
}

/** An answer of the fleet routes is small (a configuration is at most 1,000,000 characters): a larger one is refused. */
const MAX_ANSWER_BYTES = 4 << 20;

/**
 * The agent's calls to the service's fleet routes (docs/fleet.md) over node:http(s), with its own DOOR key and
 * the service settings the sync uses: GET /fleet/self (what the service has for it) and POST /fleet/self/report.
 * Every answer is validated with zod before anything of it is used.
 */
export class FleetClient {
  constructor(private readonly options: FleetClientOptions) {}

  /** GET /fleet/self?config=<held>: a newer configuration (signed) when there is one, an update, tasks. */
  async exchange(held: number | null): Promise<FleetExchange> {
    const answer = await this.call('GET', '/fleet/self', { config: String(held ?? 0) });
    const parsed = fleetExchangeSchema.safeParse(answer.json);
    if (!parsed.success) throw new FleetError(`GET /fleet/self: the answer is not the fleet's exchange: ${problemsInOneLine(parsed.error.issues)}`, 200, null);
    return parsed.data;
  }

  /** POST /fleet/self/report. */
  async report(report: FleetReport): Promise<void> {
    await this.call('POST', '/fleet/self/report', {}, report);
  }

  /**
   * GET `path` (a bundle, a firmware file) with the agent's key: the answer's body as a stream, once the service
   * answered 200. The socket idle longer than service.timeoutSeconds ends the download with an error.
   */
  async open(path: string): Promise<IncomingMessage> {
    const { url, headers } = this.target(path, {}, 'application/octet-stream');
    const where = `GET ${path}`;
    let response: IncomingMessage;
    try {
      response = await sendRequest(url, 'GET', headers, undefined, { idleMs: this.options.timeoutMs });
    } catch (err) {
      throw new FleetError(`${where}: cannot reach ${redactUrl(this.options.baseUrl)}: ${requestFailureReason(err, url)}`, null, null, { cause: err });
    }
    const status = response.statusCode ?? 0;
    if (status !== 200) {
      const text = await readText(response, 4096, (message) => new Error(message)).catch(() => '');
      throw new FleetError(`${where}: HTTP ${status}: ${text.slice(0, 200)}`, status, null);
    }
    return response;
  }

  private target(path: string, query: Record<string, string>, accept: string): { url: URL; headers: Record<string, string> } {
    const base = this.options.baseUrl.endsWith('/') ? this.options.baseUrl : `${this.options.baseUrl}/`;
    const url = new URL(path.slice(1), base);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const headers: Record<string, string> = { accept };
    const key = this.options.apiKey();
    if (this.options.apiKeyIn === 'header') headers.authorization = `Bearer ${key}`;
    else url.searchParams.set('api_key', key);
    return { url, headers };
  }

  private async call(method: 'GET' | 'POST', path: string, query: Record<string, string>, body?: unknown): Promise<{ json: unknown }> {
    const { url, headers } = this.target(path, query, 'application/json');
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const where = `${method} ${path}`;
    const service = redactUrl(this.options.baseUrl);
    let response: IncomingMessage;
    let text: string;
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    try {
      response = await sendRequest(url, method, headers, payload, { signal });
      text = await readText(response, MAX_ANSWER_BYTES, (message) => new FleetError(message, response.statusCode ?? null, null));
    } catch (err) {
      const reason = signal.aborted
        ? `no whole answer from ${service} within ${this.options.timeoutMs / 1000} s (service.timeoutSeconds)`
        : err instanceof FleetError
          ? err.message
          : `cannot reach ${service}: ${requestFailureReason(err, url)}`;
      throw new FleetError(`${where}: ${reason}`, null, null, { cause: err });
    }
    const status = response.statusCode ?? 0;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (status !== 200) {
      const header = (name: string) => {
        const value = response.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      };
      const retryAfterMs = status === 503 || status === 429 ? parseRetryAfter(header('retry-after'), header('date'), Date.now()) : null;
      const said =
        typeof json === 'object' && json !== null && typeof (json as { error?: unknown }).error === 'string'
          ? (json as { error: string }).error
          : text.slice(0, 200);
      const hint = status === 401 || status === 403 ? ' (check service.apiKeyFile: the key the agent was given at adoption)' : '';
      throw new FleetError(`${where}: HTTP ${status}: ${said}${hint}`, status, retryAfterMs);
    }
    if (json === undefined) throw new FleetError(`${where}: the answer from ${service} is not JSON`, status, null);
    return { json };
  }
}
