import { z } from 'zod';
import { userDetailSchema, userListItemSchema, type UserDetail, type UserListItem } from '../api/shapes.js';
import { readSecret, type Env } from '../config/secrets.js';
import { DoorAgentError } from '../util/errors.js';
import type { SyncServiceOptions } from './options.js';
import { formatPath } from '../util/issues.js';

export interface ServiceClientOptions {
  baseUrl: string;
  apiKey: string;
  /** header: "Authorization: Bearer KEY"; query: api_key=KEY. */
  apiKeyIn: 'header' | 'query';
  timeoutMs: number;
}

/** A failed call to the service, naming the endpoint, the status and the first offending field. */
export class ServiceError extends DoorAgentError {
  constructor(
    message: string,
    readonly endpoint: string,
    readonly status: number | null,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'ServiceError';
  }

  /** The key was refused: retrying soon will not help (and must not hammer the service). */
  get authRefused(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

const listSchema = z.array(userListItemSchema);

/** The two calls a sync makes (access-control-api.md: GET /multipleusers, GET /user), validated with zod. */
export class ServiceClient {
  constructor(private readonly options: ServiceClientOptions) {}

  private async get<T>(endpoint: string, query: Record<string, string>, schema: z.ZodType<T>): Promise<T> {
    const url = new URL(endpoint.replace(/^\//, ''), this.options.baseUrl.endsWith('/') ? this.options.baseUrl : `${this.options.baseUrl}/`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.apiKeyIn === 'header') headers.authorization = `Bearer ${this.options.apiKey}`;
    else url.searchParams.set('api_key', this.options.apiKey);
    const where = `GET ${endpoint}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, { headers, signal: AbortSignal.timeout(this.options.timeoutMs) });
      text = await response.text();
    } catch (err) {
      const reason = (err as Error).name === 'TimeoutError' ? `no answer within ${this.options.timeoutMs / 1000} s` : (err as Error).message;
      throw new ServiceError(`${where}: ${reason}`, endpoint, null, { cause: err });
    }
    if (response.status !== 200) {
      let detail = text.slice(0, 200);
      try {
        detail = (JSON.parse(text) as { error?: string }).error ?? detail;
      } catch {
        // not JSON: keep the start of the text
      }
      const hint = response.status === 401 || response.status === 403 ? ' (check service.apiKeyFile)' : '';
      throw new ServiceError(`${where}: HTTP ${response.status}: ${detail}${hint}`, endpoint, response.status);
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new ServiceError(`${where}: the body is not complete JSON (${text.length} bytes)`, endpoint, 200);
    }
    const parsed = schema.safeParse(data);
    if (!parsed.success) {
      const first = parsed.error.issues[0]!;
      throw new ServiceError(`${where}: ${formatPath(first.path, '$')}: ${first.message.replace(/^Invalid input: /, '')}`, endpoint, 200);
    }
    return parsed.data;
  }

  listUsers(tag?: 'GUEST'): Promise<UserListItem[]> {
    return this.get('/multipleusers', tag ? { user_tag: tag } : {}, listSchema);
  }

  userDetail(emailId: number): Promise<UserDetail> {
    return this.get('/user', { email_id: String(emailId) }, userDetailSchema);
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
export function createServiceClient(options: SyncServiceOptions, env: Env): ServiceClient {
  return new ServiceClient(serviceClientOptions(options, env));
}
