import { tmpdir } from 'node:os';
import type * as z from 'zod';
import { userDetailSchema, type UserDetail } from '../api/shapes.js';
import { chainHashesSchema, type ChainHashes } from '../api/audit.js';
import { readSecret, type Env } from '../util/secretFiles.js';
import { DoorAgentError } from '../util/errors.js';
import { directoryEtag, directoryQuery, parseDirectoryEtag, type DirectoryVersion } from '../protocol/directory.js';
import type { SyncServiceOptions } from './options.js';
import { formatPath } from '../util/issues.js';
import { ResponseSpool, SpoolLimitError } from './responseSpool.js';
import { requestFailureReason } from '../util/requestErrors.js';
import { redactUrl } from '../util/redact.js';
import { ACCEPTED_CODINGS, BodyDecodeError, contentCoding, decodedBody, UnknownCodingError, type ContentCoding } from './decodedBody.js';
import { httpGet } from './httpGet.js';
import { SilenceWatchdog } from '../util/silenceWatchdog.js';
import { parseRetryAfter } from '../util/retryAfter.js';

export interface ServiceClientOptions {
  baseUrl: string;
  apiKey: string;
  /** header: "Authorization: Bearer KEY"; query: api_key=KEY. */
  apiKeyIn: 'header' | 'query';
  timeoutMs: number;
  /** Where an answer larger than 1 MiB is spooled (an unlinked file): the data directory; the system's temp dir if unset. */
  spoolDir?: string;
  /** The largest answer read member by member (decompressed), 1 GiB unless set (a test sets less). */
  maxStreamedBytes?: number;
}

/** A failed call to the service, naming the endpoint, the status and the first offending field. */
export class ServiceError extends DoorAgentError {
  /** A 503 or 429 said when to come back (Retry-After, in ms from the answer); null otherwise. */
  readonly retryAfterMs: number | null;

  constructor(
    message: string,
    readonly endpoint: string,
    readonly status: number | null,
    options: { cause?: unknown; retryAfterMs?: number | null } = {},
  ) {
    super(message, options);
    this.name = 'ServiceError';
    this.retryAfterMs = options.retryAfterMs ?? null;
  }

  /** The key was refused: retrying soon will not help (and must not hammer the service). */
  get authRefused(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** Answers read whole (GET /user) are small; a larger one is refused rather than parsed. */
const MAX_WHOLE_BYTES = 16 << 20;
/** Answers read member by member (the user list, the directory) are bounded by disk, not memory: up to this. */
const MAX_STREAMED_BYTES = 1 << 30;
/** Up to this much of an answer stays in memory; the rest goes to an unlinked file beside the cache. */
const SPOOL_MEMORY_BYTES = 1 << 20;

/** A received answer: its status, its body (decompressed, spooled: see ResponseSpool) and the headers a sync reads. */
export interface SpooledAnswer {
  status: number;
  body: ResponseSpool;
  etag: string | undefined;
  /** From Retry-After, on a 503 or 429 only. */
  retryAfterMs: number | null;
}

/** A GET /directory answer: the body to stage with the version its ETag names, 304 (unchanged), or 404 (no such call). */
export type DirectoryAnswer =
  | { kind: 'answer'; body: ResponseSpool; etag: DirectoryVersion | null }
  | { kind: 'unchanged'; etag: DirectoryVersion | null }
  | { kind: 'unsupported' };

/** The requests made so far, and their bodies: bytes on the wire (compressed or not) and after decompression. */
export interface Traffic {
  requests: number;
  wireBytes: number;
  bodyBytes: number;
}

/**
 * The calls a sync makes (docs/access-control-api.md: GET /multipleusers, GET /user; the reference service's GET
 * /directory). Each asks for a compressed answer (Accept-Encoding: gzip, br) and decompresses it as it arrives.
 * Small answers are validated whole with zod; the large ones come back spooled, to be validated member by member
 * (streamedAnswers.ts), so a directory of any size is read with bounded memory.
 */
export class ServiceClient {
  /** Counted over the client's life; a sync takes the difference (sync.ts). */
  readonly traffic: Traffic = { requests: 0, wireBytes: 0, bodyBytes: 0 };

  constructor(private readonly options: ServiceClientOptions) {}

  /**
   * One GET, its body decompressed (gzip, br or none) and spooled. The timeout is for silence: no answer, or an
   * answer that stops for that long, not for the whole transfer (a large directory over a slow link keeps flowing).
   * The limit counts the decompressed bytes as they come: a zip bomb is stopped there, never held.
   */
  private async request(endpoint: string, query: Record<string, string>, maxBytes: number, ifNoneMatch?: string): Promise<SpooledAnswer> {
    const url = new URL(endpoint.replace(/^\//, ''), this.options.baseUrl.endsWith('/') ? this.options.baseUrl : `${this.options.baseUrl}/`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': ACCEPTED_CODINGS };
    if (ifNoneMatch) headers['if-none-match'] = ifNoneMatch;
    if (this.options.apiKeyIn === 'header') headers.authorization = `Bearer ${this.options.apiKey}`;
    else url.searchParams.set('api_key', this.options.apiKey);
    const where = `GET ${endpoint}`;
    const seconds = this.options.timeoutMs / 1000;
    const controller = new AbortController();
    let stuck = false;
    const silence = new SilenceWatchdog(this.options.timeoutMs, (why) => {
      stuck = why === 'stuck';
      controller.abort();
    });
    const body = new ResponseSpool(this.options.spoolDir ?? tmpdir(), { memoryBytes: SPOOL_MEMORY_BYTES, maxBytes });
    let status: number | null = null;
    let coding: ContentCoding = 'identity';
    let wire = 0;
    this.traffic.requests++;
    // The service's silence is what times out, not the agent's own pace: while a chunk is being decompressed and
    // stored (the decoder takes no more until it has), the agent reads nothing and the service is not waited for.
    // On a busy board the decompression of one 64 KiB read took longer than the timeout (the fleet bench's cold start).
    const received = async function* (message: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
      for await (const chunk of message) {
        wire += chunk.length;
        silence.pause();
        yield chunk;
        silence.resume();
      }
    };
    try {
      const response = await httpGet(url, headers, controller.signal);
      silence.touch();
      status = response.statusCode ?? 0;
      const header = (name: string) => {
        const value = response.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      };
      const retryAfterMs = status === 503 || status === 429 ? parseRetryAfter(header('retry-after'), header('date'), Date.now()) : null;
      try {
        coding = contentCoding(header('content-encoding'));
        for await (const chunk of decodedBody(coding, received(response), controller.signal)) body.append(chunk);
      } catch (err) {
        // A refusal's body only explains it: one that does not decompress still carries its status and Retry-After.
        if (status === 200 || !(err instanceof BodyDecodeError || err instanceof UnknownCodingError)) throw err;
        controller.abort();
      }
      return { status, body, etag: header('etag'), retryAfterMs };
    } catch (err) {
      const timedOut = controller.signal.aborted;
      controller.abort();
      body.dispose();
      const encoded = coding === 'identity' ? '' : ` (Content-Encoding: ${coding}, ${wire} bytes received)`;
      if (err instanceof SpoolLimitError) {
        const what = coding === 'identity' ? err.message : `the answer decompresses to more than ${Math.round(err.maxBytes / (1 << 20))} MiB${encoded}`;
        throw new ServiceError(`${where}: ${what}: not read`, endpoint, status, { cause: err });
      }
      if (err instanceof BodyDecodeError || err instanceof UnknownCodingError) {
        const after = err instanceof BodyDecodeError ? `, after ${wire} bytes received` : '';
        throw new ServiceError(`${where}: the answer is refused: ${err.message}${after}`, endpoint, status, { cause: err });
      }
      // The service's URL (no key: it may be in the query) and the cause an operator can act on.
      const service = redactUrl(this.options.baseUrl);
      const reason = stuck
        ? `the agent could not ${coding === 'identity' ? 'store' : 'decompress'} the answer from ${service}: one chunk took over ${silence.maxPauseMs / 1000} s (${silence.maxPauseMs / this.options.timeoutMs} × service.timeoutSeconds; is the machine overloaded?), after ${wire} bytes`
        : timedOut
          ? status === null
            ? `no answer from ${service} within ${seconds} s (service.timeoutSeconds)`
            : `the answer from ${service} stopped for ${seconds} s after ${wire} bytes`
          : status === null
            ? `cannot reach ${service}: ${requestFailureReason(err, url)}`
            : `the answer from ${service} broke off after ${wire} bytes: ${requestFailureReason(err, url)}`;
      throw new ServiceError(`${where}: ${reason}`, endpoint, status, { cause: err });
    } finally {
      silence.stop();
      this.traffic.wireBytes += wire;
      this.traffic.bodyBytes += body.size;
    }
  }

  /** A non-200 answer as an error naming the endpoint, the status and the service's own message. */
  private refused(endpoint: string, answer: SpooledAnswer): ServiceError {
    let detail = answer.body.head(200);
    answer.body.dispose();
    try {
      detail = (JSON.parse(detail) as { error?: string }).error ?? detail;
    } catch {
      // not JSON (or cut at 200 bytes): keep the start of the text
    }
    const hint =
      answer.status === 401 || answer.status === 403
        ? ' (check service.apiKeyFile)'
        : answer.status >= 300 && answer.status < 400
          ? ' (a redirect: the agent does not follow them; set service.baseUrl to where the service answers)'
          : '';
    const wait = answer.retryAfterMs === null ? '' : ` (Retry-After: ${Math.round(answer.retryAfterMs / 1000)} s)`;
    return new ServiceError(`GET ${endpoint}: HTTP ${answer.status}: ${detail}${hint}${wait}`, endpoint, answer.status, {
      retryAfterMs: answer.retryAfterMs,
    });
  }

  /** A 200 answer read whole and validated. */
  private async getWhole<T>(endpoint: string, query: Record<string, string>, schema: z.ZodType<T>): Promise<T> {
    const answer = await this.request(endpoint, query, MAX_WHOLE_BYTES);
    if (answer.status !== 200) throw this.refused(endpoint, answer);
    const text = answer.body.text();
    answer.body.dispose();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new ServiceError(`GET ${endpoint}: the body is not complete JSON (${text.length} bytes)`, endpoint, 200);
    }
    const parsed = schema.safeParse(data);
    if (!parsed.success) {
      const first = parsed.error.issues[0]!;
      throw new ServiceError(`GET ${endpoint}: ${formatPath(first.path, '$')}: ${first.message.replace(/^Invalid input: /, '')}`, endpoint, 200);
    }
    return parsed.data;
  }

  /** GET /multipleusers (all, or one user_tag), spooled: read it with streamedAnswers.stageUserList. The caller disposes it. */
  async listUsers(tag?: 'GUEST'): Promise<ResponseSpool> {
    const answer = await this.request('/multipleusers', tag ? { user_tag: tag } : {}, this.maxStreamed);
    if (answer.status !== 200) throw this.refused('/multipleusers', answer);
    return answer.body;
  }

  userDetail(emailId: number): Promise<UserDetail> {
    return this.getWhole('/user', { email_id: String(emailId) }, userDetailSchema);
  }

  /**
   * The extension endpoint GET /directory?since=REV&history=ID&tag=TAG (the reference service's;
   * docs/reference-service.md), spooled: read it with streamedAnswers.stageDirectory, then dispose it. With the
   * version its ETag names (null: no ETag, or not a directory's), which the sync checks against the body's.
   */
  async directory(held: DirectoryVersion | null): Promise<DirectoryAnswer> {
    const answer = await this.request('/directory', directoryQuery(held), this.maxStreamed, held === null ? undefined : directoryEtag(held));
    const etag = parseDirectoryEtag(answer.etag);
    if (answer.status === 304 || answer.status === 404) {
      answer.body.dispose();
      return answer.status === 304 ? { kind: 'unchanged', etag } : { kind: 'unsupported' };
    }
    if (answer.status !== 200) throw this.refused('/directory', answer);
    return { kind: 'answer', body: answer.body, etag };
  }

  /**
   * GET /audit/agents/{agentId}/hashes (the reference service's, docs/audit.md): the hashes the service holds of
   * one of the agent's chains, after seq `after`, at most `limit`, in seq order.
   */
  chainHashes(agentId: string, chain: string, after: number, limit: number): Promise<ChainHashes> {
    const query = { chain, after: String(after), limit: String(limit) };
    return this.getWhole(`/audit/agents/${encodeURIComponent(agentId)}/hashes`, query, chainHashesSchema);
  }

  private get maxStreamed(): number {
    return this.options.maxStreamedBytes ?? MAX_STREAMED_BYTES;
  }
}

/** The client options for the `service` section, the key from its file or DOOR_AGENT_API_KEY: built here only. */
export function serviceClientOptions(options: SyncServiceOptions, env: Env): ServiceClientOptions {
  return {
    baseUrl: options.baseUrl,
    apiKey: readSecret('service.apiKeyFile', options.apiKeyFile, env, 'DOOR_AGENT_API_KEY') ?? '',
    apiKeyIn: options.apiKeyIn,
    timeoutMs: options.timeoutSeconds * 1000,
  };
}

/** The service client for the `service` section (door-agent sync, the demo). */
export function createServiceClient(options: SyncServiceOptions, env: Env, spoolDir: string): ServiceClient {
  return new ServiceClient({ ...serviceClientOptions(options, env), spoolDir });
}
