import { createHash, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type * as z from 'zod';
import { enrolAnswerSchema, enrolChallengeAnswerSchema, enrolmentStateSchema, type BoardFacts, type Grant } from '../api/fleet.js';
import { fingerprint, fleetSignatureMatches, publicKeyFromRaw } from '../protocol/fleetSigning.js';
import { DoorAgentError } from '../util/errors.js';
import { problemsInOneLine } from '../util/issues.js';
import { requestFailureReason } from '../util/requestErrors.js';
import { readText, sendRequest } from './httpRequest.js';

/** An answer of the enrolment is small; a larger one is not read. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** Each call, answer included. */
const CALL_MS = 30_000;

/**
 * A call of the enrolment that failed. `transient`: worth asking again (the service out of reach, a 503 such as an
 * MQTT login not made yet); otherwise the service refused for good (the message says why) or answered falsely.
 */
export class EnrolError extends DoorAgentError {
  constructor(
    message: string,
    readonly transient: boolean,
    readonly status: number | null = null,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'EnrolError';
  }
}

export type ChallengeAnswer = z.infer<typeof enrolChallengeAnswerSchema>;
export type EnrolAnswer = z.infer<typeof enrolAnswerSchema>;
export type EnrolmentState = z.infer<typeof enrolmentStateSchema>;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The board's calls of the enrolment (docs/fleet.md, "Enrolment") over node:http(s): POST /fleet/enrol/challenge
 * with a nonce (no secret), POST /fleet/enrol with the code's secret, GET /fleet/enrolments/{id} with the poll secret, and the confirmation with the DOOR key granted.
 * Every answer is validated with zod before anything of it is used; TLS trusts what Node.js trusts.
 */
export class EnrolClient {
  private readonly base: URL;

  constructor(serviceUrl: string) {
    this.base = new URL(serviceUrl.endsWith('/') ? serviceUrl : `${serviceUrl}/`);
  }

  async challenge(nonce: string): Promise<ChallengeAnswer> {
    return parsed('POST /fleet/enrol/challenge', enrolChallengeAnswerSchema, await this.call('POST', 'fleet/enrol/challenge', {}, { nonce }));
  }

  async enrol(secret: string, facts: BoardFacts): Promise<EnrolAnswer> {
    return parsed('POST /fleet/enrol', enrolAnswerSchema, await this.call('POST', 'fleet/enrol', {}, { secret, facts }));
  }

  async poll(enrolmentId: string, pollSecret: string): Promise<EnrolmentState> {
    const json = await this.call('GET', `fleet/enrolments/${enrolmentId}`, { authorization: `Bearer ${pollSecret}` });
    return parsed('GET /fleet/enrolments', enrolmentStateSchema, json);
  }

  async confirm(enrolmentId: string, apiKey: string): Promise<void> {
    await this.call('POST', `fleet/enrolments/${enrolmentId}/confirm`, { authorization: `Bearer ${apiKey}` }, {});
  }

  private async call(method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown): Promise<unknown> {
    const url = new URL(path, this.base);
    const where = `${method} ${url.pathname}`;
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    const sent: Record<string, string> = Object.assign({ accept: 'application/json' }, headers);
    if (payload) Object.assign(sent, { 'content-type': 'application/json', 'content-length': String(payload.length) });
    const signal = AbortSignal.timeout(CALL_MS);
    let response: IncomingMessage;
    let text: string;
    try {
      response = await sendRequest(url, method, sent, payload, { signal });
      text = await readText(response, MAX_ANSWER_BYTES, (message) => new EnrolError(message, false));
    } catch (err) {
      const reason = signal.aborted ? `no answer within ${CALL_MS / 1000} s` : err instanceof EnrolError ? err.message : requestFailureReason(err, url);
      throw new EnrolError(`cannot reach ${this.base.origin}: ${reason}`, true, null, { cause: err });
    }
    const status = response.statusCode ?? 0;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (status === 200 && json !== undefined) return json;
    const said = typeof (json as { error?: unknown } | undefined)?.error === 'string' ? (json as { error: string }).error : `HTTP ${status}`;
    // The service out of reach behind a proxy, or an answer it cannot give yet (a 503: asked again).
    const transient = status >= 500 || status === 429 || status === 0;
    // The service's own words (it names what was wrong); the caller says which call it was.
    throw new EnrolError(status === 200 ? `${where}: the answer is not JSON` : said, transient, status);
  }
}

function parsed<T>(where: string, schema: z.ZodType<T>, json: unknown): T {
  const result = schema.safeParse(json);
  if (!result.success) throw new EnrolError(`${where}: the answer is not the enrolment's (${problemsInOneLine(result.error.issues)})`, false);
  return result.data;
}

const NOT_SENT = "the code's secret was not sent, nothing was written";

/** The key of the code's fingerprint, or the refusal naming both fingerprints (`after`: what was and was not done). */
function keyOfFingerprint(raw: string, code: { fingerprint: string }, url: string, after: string): KeyObject {
  const key = publicKeyFromRaw(raw);
  if (key === null) throw new EnrolError(`the answer of ${url} carries no Ed25519 key: refused, ${after}`, false);
  const held = fingerprint(key);
  if (held !== code.fingerprint) {
    throw new EnrolError(
      `the service at ${url} signs with a key of fingerprint ${held}, not the code's ${code.fingerprint}: it is not the service this code was made for (a wrong URL, or someone in between); ${after}`,
      false,
    );
  }
  return key;
}

/**
 * The service's answer to the board's challenge, checked before the code's secret goes anywhere: signed (purpose
 * 'enrol-challenge') by a key of the code's fingerprint over this board's nonce, and for the origin of the URL the
 * installer gave (a signature made for another board's nonce, or another address, is refused).
 */
export function checkChallenge(answer: ChallengeAnswer, nonce: string, code: { fingerprint: string }, url: string): void {
  const key = keyOfFingerprint(answer.service_key, code, url, NOT_SENT);
  if (!fleetSignatureMatches(key, 'enrol-challenge', { nonce, origin: answer.origin }, answer.signature)) {
    throw new EnrolError(
      `the challenge's answer of ${url} is not signed by the key it names for this board's nonce (forged, or replayed from another exchange): refused, ${NOT_SENT}`,
      false,
    );
  }
  const given = new URL(url).origin;
  if (answer.origin !== given) {
    throw new EnrolError(
      `the service's address is ${answer.origin} (its server.publicUrl), not ${given} as given: enrol with the URL door-agent service enrol-code prints; ${NOT_SENT}`,
      false,
    );
  }
}

/**
 * The service's answer to a code, checked: signed by a key of the code's fingerprint (the service the code was made
 * for, and no other: nothing is trusted on first use), and bound to this code's secret. Returns that key.
 */
export function checkEnrolAnswer(answer: EnrolAnswer, code: { secret: string; fingerprint: string }, url: string): KeyObject {
  const key = keyOfFingerprint(answer.service_key, code, url, 'nothing was written');
  if (!fleetSignatureMatches(key, 'enrol', answer.accepted, answer.signature)) {
    throw new EnrolError(`the answer of ${url} is not signed by the key it names: refused, nothing was written`, false);
  }
  if (answer.accepted.secret_sha256 !== sha256(code.secret)) {
    throw new EnrolError(`the answer of ${url} is for another code (replayed): refused, nothing was written`, false);
  }
  return key;
}

/** An adopted enrolment's grant, checked: for this enrolment, signed (purpose 'grant') by the service's key. */
export function checkGrant(state: Extract<EnrolmentState, { state: 'adopted' }>, serviceKey: KeyObject, enrolmentId: string): Grant {
  if (!fleetSignatureMatches(serviceKey, 'grant', state.grant, state.signature)) {
    throw new EnrolError("the grant is not signed by the service's key this board trusts: refused, nothing was written", false);
  }
  if (state.grant.enrolment_id !== enrolmentId)
    throw new EnrolError(`the grant is for enrolment ${state.grant.enrolment_id}, not ${enrolmentId}: refused`, false);
  return state.grant;
}
