import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Rank } from '../apiKeys.js';
import { DELEGATION_HEADER } from '../keyCheck.js';

const TOKEN_TTL_MS = 10_000;

export interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** An API answer read as it comes (a download). */
export interface ApiStream {
  status: number;
  headers: Record<string, unknown>;
  body: Readable;
}

/**
 * The console's actions run the API's own routes in-process (fastify's inject), with the session's rank: each
 * call carries a one-time token (keyCheck.ts DELEGATION_HEADER) that the key check turns into that rank. So a
 * REGULAR session meets exactly the API's refusals, and a change moves the directory revision as an API call does.
 */
export class ApiDelegation {
  private readonly tokens = new Map<string, { rank: Rank; who: string | undefined; expires: number }>();

  constructor(private readonly now: () => number) {}

  /** The rank of a token (and who signed in, when the call named them), which is spent; null when unknown or stale. */
  redeem(token: string): { rank: Rank; who?: string } | null {
    const entry = this.tokens.get(token);
    this.tokens.delete(token);
    if (!entry || entry.expires <= this.now()) return null;
    return entry.who === undefined ? { rank: entry.rank } : { rank: entry.rank, who: entry.who };
  }

  /**
   * Runs the API's route as the session: its rank, and `who` signed in (a change that records its author, such as an
   * agent's configuration version, names them: keyCheck.ts callerOf).
   */
  async call(
    app: FastifyInstance,
    rank: Rank,
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: Record<string, unknown>,
    who?: string,
  ): Promise<ApiAnswer> {
    const token = randomBytes(32).toString('base64url');
    this.tokens.set(token, { rank, who, expires: this.now() + TOKEN_TTL_MS });
    try {
      const res = await app.inject({
        method,
        url,
        headers: { [DELEGATION_HEADER]: token, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
      return { status: res.statusCode, body: res.json() as Record<string, unknown> };
    } finally {
      this.tokens.delete(token);
    }
  }

  /**
   * A GET of the API as the session, its answer as a stream (a download: a report's CSV) read as the route writes
   * it, never held whole; `signal` ends it (the browser went away).
   */
  async stream(app: FastifyInstance, rank: Rank, url: string, signal: AbortSignal): Promise<ApiStream> {
    const token = randomBytes(32).toString('base64url');
    this.tokens.set(token, { rank, who: undefined, expires: this.now() + TOKEN_TTL_MS });
    try {
      const res = await app.inject({ method: 'GET', url, headers: { [DELEGATION_HEADER]: token }, payloadAsStream: true, signal });
      return { status: res.statusCode, headers: res.headers, body: res.stream() };
    } finally {
      this.tokens.delete(token);
    }
  }
}

/** An API answer as the console says it: the success text, or the error (a 403 names the rank it needs). */
export function answerText(answer: ApiAnswer, rank: Rank): { kind: 'ok' | 'error'; text: string } {
  if (answer.status === 200)
    return { kind: 'ok', text: String(answer.body.success ?? 'done') + (answer.body.warning ? ` (${String(answer.body.warning)})` : '') };
  const error = String(answer.body.error ?? `failed (HTTP ${answer.status})`);
  if (answer.status === 403) {
    const needed = /rank (\w+)/.exec(error)?.[1] ?? 'ADMIN';
    return { kind: 'error', text: `This needs rank ${needed}: you are signed in as ${rank}.` };
  }
  return { kind: 'error', text: error };
}
