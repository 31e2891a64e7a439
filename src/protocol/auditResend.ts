import * as z from 'zod';
import { problemsInOneLine } from '../util/issues.js';

/**
 * The service's request to an agent to send again the audit events of a gap (docs/audit.md, "How a gap closes"):
 * `P/agents/<id>/audit/resend`, in, QoS 1, not retained, `{"chain":"<chain id>","from":N,"to":M}`. Not signed: it
 * only makes the agent publish its own events again, which the service stores once.
 */

/** The most seqs one request names; a longer gap is asked for in several. @internal */
export const MAX_RESEND_SEQS = 10_000;

/** A request is a few dozen bytes: anything much longer is not one. */
const MAX_RESEND_BYTES = 1024;

const seq = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

const resendSchema = z
  .object({
    chain: z.string().regex(/^[0-9a-f-]{1,64}$/, 'must be the chain id (a UUID)'),
    from: seq,
    to: seq,
  })
  .refine((r) => r.from <= r.to, { path: ['to'], message: 'must not be below from' })
  .refine((r) => r.to - r.from < MAX_RESEND_SEQS, { path: ['to'], message: `at most ${MAX_RESEND_SEQS} seqs in one request` });

/** Seqs from..to (both included) of one chain. */
export interface ResendRequest {
  chain: string;
  from: number;
  to: number;
}

/** A request parsed and checked; a problem says what was wrong with it, in words naming the field. */
export function parseResendRequest(payload: Buffer): ResendRequest | { problem: string } {
  if (payload.length > MAX_RESEND_BYTES) return { problem: `${payload.length} bytes, more than ${MAX_RESEND_BYTES}` };
  let json: unknown;
  try {
    json = JSON.parse(payload.toString('utf8'));
  } catch {
    return { problem: 'not JSON' };
  }
  const parsed = resendSchema.safeParse(json);
  if (!parsed.success) return { problem: problemsInOneLine(parsed.error.issues) };
  return parsed.data;
}

/** The requests for seqs from..to of `chain`: one per MAX_RESEND_SEQS, oldest first. */
export function resendRequests(chain: string, from: number, to: number): ResendRequest[] {
  const requests: ResendRequest[] = [];
  for (let start = from; start <= to; start += MAX_RESEND_SEQS) requests.push({ chain, from: start, to: Math.min(to, start + MAX_RESEND_SEQS - 1) });
  return requests;
}

/** A request as it goes on the wire. */
export function resendPayload(request: ResendRequest): string {
  return JSON.stringify({ chain: request.chain, from: request.from, to: request.to });
}
