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

/** GET /directory: changed users (list and detail shapes), removed ids, the revision; `full` lists everyone. */
export const directorySchema = z
  .object({
    revision: z.number().int().nonnegative(),
    full: z.boolean(),
    users: z.array(userListItemSchema),
    details: z.record(z.string().regex(/^[0-9]{1,15}$/, 'expected an email_id as the key'), userDetailSchema),
    removed: z.array(z.number().int().nonnegative()),
  })
  .superRefine((d, ctx) => {
    const listed = new Set(d.users.map((u) => u.email_id));
    for (const key of Object.keys(d.details)) {
      if (!listed.has(Number(key))) ctx.addIssue({ code: 'custom', path: ['details', key], message: `no user with email_id ${key} in users` });
    }
    for (const u of d.users) {
      if (d.details[String(u.email_id)] === undefined) ctx.addIssue({ code: 'custom', path: ['details', String(u.email_id)], message: 'missing' });
    }
  });
export type DirectoryAnswer = z.output<typeof directorySchema>;

/** The two calls a sync makes (access-control-api.md: GET /multipleusers, GET /user), validated with zod. */
export class ServiceClient {
  constructor(private readonly options: ServiceClientOptions) {}

  private async get<T>(
    endpoint: string,
    query: Record<string, string>,
    schema: z.ZodType<T>,
    extra: { ifNoneMatch?: string; passStatuses?: readonly number[] } = {},
  ): Promise<T | { status: number }> {
    const url = new URL(endpoint.replace(/^\//, ''), this.options.baseUrl.endsWith('/') ? this.options.baseUrl : `${this.options.baseUrl}/`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (extra.ifNoneMatch) headers['if-none-match'] = extra.ifNoneMatch;
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
    if (extra.passStatuses?.includes(response.status)) return { status: response.status };
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
    return this.get('/multipleusers', tag ? { user_tag: tag } : {}, listSchema) as Promise<UserListItem[]>;
  }

  userDetail(emailId: number): Promise<UserDetail> {
    return this.get('/user', { email_id: String(emailId) }, userDetailSchema) as Promise<UserDetail>;
  }

  /**
   * The extension endpoint GET /directory?since=REV (the reference service's; docs/reference-service.md):
   * 'unsupported' when the service answers 404 (the seed's API has no such call), 'unchanged' on 304.
   */
  async directory(since: number | undefined): Promise<DirectoryAnswer | 'unsupported' | 'unchanged'> {
    const answer = await this.get('/directory', since === undefined ? {} : { since: String(since) }, directorySchema, {
      ifNoneMatch: since === undefined ? undefined : `"dir-${since}"`,
      passStatuses: [304, 404],
    });
    if ('status' in answer && !('revision' in answer)) return answer.status === 304 ? 'unchanged' : 'unsupported';
    return answer as DirectoryAnswer;
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
