import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import {
  enrolAnswerSchema,
  enrolChallengeAnswerSchema,
  enrolChallengeRequestSchema,
  enrolmentStateSchema,
  enrolRequestSchema,
  type Grant,
} from '../../api/fleet.js';
import { successAnswerSchema } from '../../api/answers.js';
import { signFleet } from '../../protocol/fleetSigning.js';
import { keyDigest } from '../apiKeys.js';
import { documented } from '../openapi/routeDoc.js';
import { BadRequest, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { serviceTimestamp } from '../users.js';
import { AgentLoginFailed } from './agentMqtt.js';
import { EnrolCodes, secretDigest, type CodeRefusal } from './enrolCodes.js';
import { enrolmentParams, fleetOf } from './fleetDeps.js';
import { FleetAgents, signedGrant } from './fleetAgents.js';

const pollHeaders = z.object({ authorization: z.string().describe("Bearer <poll_secret>: the poll secret of POST /fleet/enrol's answer") });
/** An MQTT password handed in a grant: 24 random bytes, base64url. */
const newPassword = () => randomBytes(24).toString('base64url');
/** What a refused poll waits before it asks again. */
const RETRY_SECONDS = 5;

const at = (ms: number) => `${serviceTimestamp(ms)} UTC`;

function codeRefused(refusal: CodeRefusal): BadRequest {
  if (refusal.reason === 'unknown') return new BadRequest('this enrolment code is not known to this service (mistyped, or made by another service)', 403);
  if (refusal.reason === 'used') return new BadRequest(`this enrolment code was used at ${at(refusal.at)}: ask the operator for a new one`, 403);
  return new BadRequest(`this enrolment code expired at ${at(refusal.at)}: ask the operator for a new one`, 403);
}

/** The credential of `Authorization: Bearer <credential>`, or null. */
function bearer(request: FastifyRequest): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match ? match[1]! : null;
}

/** Answers that hand out secrets are kept by nobody in between. */
const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');

/**
 * The board's side of enrolment (docs/fleet.md, "Enrolment"): the challenge that proves the service's key before any
 * secret is sent, POST /fleet/enrol with a code's secret, the poll
 * of GET /fleet/enrolments/{id} with the poll secret (pending, refused, or the signed grant), and the agent's
 * confirmation with its own DOOR key, which ends the poll secret.
 */
export function registerEnrolRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const codes = new EnrolCodes(ctx.db);
  const agents = new FleetAgents(ctx.db);

  app.post(
    '/fleet/enrol/challenge',
    documented(
      {
        summary: "Proves the service's identity key to a board before it sends a code's secret: signs the board's nonce and this service's origin.",
        description:
          "No API key, and nothing kept. The signature (purpose `enrol-challenge`) covers `{nonce, origin}`, the origin being server.publicUrl's: a board checks that the key has its code's fingerprint and that the origin is the one of the URL it was given, and only then sends the secret to POST /fleet/enrol.",
        tag: 'Fleet',
        key: 'none',
        params: enrolChallengeRequestSchema,
        answer: enrolChallengeAnswerSchema,
        statuses: { 404: 'This service has no server.fleet section.' },
      },
      { config: { ownCredential: true } },
    ),
    async (request, reply) => {
      const fleet = fleetOf(ctx);
      const { nonce } = parseParams(enrolChallengeRequestSchema, {}, request.body);
      const origin = new URL(fleet.publicUrl).origin;
      noStore(reply);
      return { origin, service_key: fleet.keys.publicRaw, signature: signFleet(fleet.keys.identity, 'enrol-challenge', { nonce, origin }) };
    },
  );

  app.post(
    '/fleet/enrol',
    documented(
      {
        summary: "Enrols a board with an enrolment code's secret: a pending agent, until an operator adopts or refuses it.",
        description:
          "No API key: the code's secret is the credential, good once. The answer is signed (purpose `enrol`) with the service's identity key, whose fingerprint the code carries, and bound to the code by the secret's SHA-256. 403: the code is unknown, used or expired (the message says which).",
        tag: 'Fleet',
        key: 'none',
        params: enrolRequestSchema,
        answer: enrolAnswerSchema,
        statuses: { 404: 'This service has no server.fleet section.' },
      },
      { config: { ownCredential: true } },
    ),
    async (request, reply) => {
      const fleet = fleetOf(ctx);
      const { secret, facts } = parseParams(enrolRequestSchema, {}, request.body);
      const now = ctx.clock.wallNow();
      // The code's use and the pending agent: both committed, or neither.
      const outcome = await ctx.db.transaction(async () => {
        const refusal = await codes.use(secret, now);
        return refusal ?? (await agents.createPending(facts, now));
      });
      if ('reason' in outcome) throw codeRefused(outcome);
      ctx.logger.info({ enrolment: outcome.enrolmentId, hostname: facts.hostname, version: facts.version }, 'a board enrolled: pending adoption');
      const accepted = { enrolment_id: outcome.enrolmentId, secret_sha256: secretDigest(secret), poll_secret: outcome.pollSecret };
      noStore(reply);
      return { accepted, service_key: fleet.keys.publicRaw, signature: signFleet(fleet.keys.identity, 'enrol', accepted) };
    },
  );

  app.get(
    '/fleet/enrolments/:enrolment_id',
    documented(
      {
        summary: 'Where an enrolment stands: pending, refused (with why), or adopted with its signed grant.',
        description:
          "`Authorization: Bearer <poll_secret>` (no API key; 401 when it is absent or not this enrolment's). Until the agent confirms, each answer of an adopted enrolment is a fresh grant: a new DOOR key and, with server.fleet.agentMqtt, a new MQTT password, the ones handed before revoked (a lost answer is simply asked again). The grant is signed (purpose `grant`) with the identity key. 503: its MQTT login could not be made (the reason; nothing is handed out).",
        tag: 'Fleet',
        key: 'none',
        pathParams: enrolmentParams,
        headers: pollHeaders,
        answer: enrolmentStateSchema,
        statuses: {
          404: 'No such enrolment, or this service has no server.fleet section.',
          410: 'The grant was delivered and confirmed: the poll secret is no longer good.',
          503: "The agent's MQTT login could not be made (the message says why).",
        },
      },
      { config: { ownCredential: true } },
    ),
    async (request, reply) => {
      const fleet = fleetOf(ctx);
      const { enrolment_id: id } = parseParams(enrolmentParams, request.params, undefined);
      const secret = bearer(request);
      if (secret === null) throw new BadRequest("this call takes the enrolment's poll secret: Authorization: Bearer <poll_secret>", 401);
      const check = await agents.checkPoll(id, secret);
      if ('refused' in check) {
        if (check.refused === 'unknown') throw new BadRequest(`no enrolment ${id}`, 404);
        if (check.refused === 'wrong') throw new BadRequest(`the poll secret is not enrolment ${id}'s`, 401);
        throw new BadRequest(`enrolment ${id} was delivered and confirmed: its poll secret is no longer good`, 410);
      }
      const { row } = check;
      noStore(reply);
      if (row.state === 'pending') return { state: 'pending' };
      if (row.state === 'refused') return { state: 'refused', reason: row.reason ?? '' };
      const agentId = row.agent_id!;
      // The broker login first: when it cannot be made, nothing is handed out (the agent asks again).
      let mqtt: Grant['mqtt'] = null;
      if (fleet.agentMqtt) {
        const password = newPassword();
        try {
          await fleet.agentMqtt.logins.setLogin(agentId, password);
        } catch (err) {
          const reason = err instanceof AgentLoginFailed ? err.message : `the MQTT login could not be made: ${(err as Error).message}`;
          ctx.logger.warn({ enrolment: id, agent: agentId, reason }, 'grant held back: no MQTT login');
          reply.header('retry-after', String(RETRY_SECONDS));
          throw new BadRequest(`agent ${agentId} is adopted, but ${reason}`, 503);
        }
        mqtt = { url: fleet.agentMqtt.url, username: agentId, password };
      }
      const apiKey = await agents.freshKey(id, ctx.clock.wallNow());
      if (apiKey === null) throw new BadRequest(`enrolment ${id} was delivered and confirmed: its poll secret is no longer good`, 410);
      ctx.logger.info({ enrolment: id, agent: agentId }, 'grant handed out (a fresh DOOR key; the one handed before revoked)');
      const grant: Grant = {
        enrolment_id: id,
        agent_id: agentId,
        service_url: fleet.publicUrl,
        api_key: apiKey,
        mqtt,
        release_key: fleet.keys.releaseRaw,
      };
      return signedGrant(fleet.keys, grant);
    },
  );

  app.post(
    '/fleet/enrolments/:enrolment_id/confirm',
    documented(
      {
        summary: 'The agent says it wrote its files: the enrolment is delivered and its poll secret no longer good.',
        description: 'With the DOOR key the grant gave (403 with any other key). Confirming again is no error.',
        tag: 'Fleet',
        key: 'any',
        pathParams: enrolmentParams,
        answer: successAnswerSchema,
        statuses: { 404: 'This service has no server.fleet section.' },
      },
      { config: { doorMayPost: true } },
    ),
    async (request) => {
      fleetOf(ctx);
      const { enrolment_id: id } = parseParams(enrolmentParams, request.params, undefined);
      const key = request.keyGiven?.key ?? '';
      if (request.rank !== 'DOOR' || key === '' || !(await agents.confirm(id, keyDigest(key)))) {
        throw new BadRequest(`confirm with the DOOR key enrolment ${id} was granted: this key is not it`, 403);
      }
      ctx.logger.info({ enrolment: id }, 'grant confirmed by the agent: its poll secret is no longer good');
      return { success: `enrolment ${id} confirmed: its poll secret is no longer good` };
    },
  );
}
