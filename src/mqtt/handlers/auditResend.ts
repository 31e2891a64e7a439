import type { IPublishPacket } from 'mqtt';
import type { Logger } from 'pino';
import { parseResendRequest } from '../../protocol/auditResend.js';
import type { Topics } from '../../protocol/topics.js';
import type { EventLog } from '../../store/eventLog.js';
import type { Clock } from '../../util/clock.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';

/**
 * At most one request applied per chain this often: a flood of requests does not make the agent resend its log over
 * and over. @internal
 */
export const RESEND_EVERY_MS = 10_000;

/** Why the log did nothing, in the debug line's words. */
const IGNORED = { 'another chain': "it names another chain than this log's", 'past the last seq': "it names seqs past this log's last" } as const;

export interface AuditResendDeps {
  topics: Topics;
  events: Pick<EventLog, 'republish'>;
  clock: Clock;
  logger: Logger;
  /** Events were made unpublished again: the outbox goes back to the oldest (they are behind what it has sent). */
  onRepublished: () => void;
}

/**
 * The service's request to send audit events again, `P/agents/<id>/audit/resend` (protocol/auditResend.ts; docs/audit.md,
 * "How a gap closes"): the seqs it names are marked unpublished again in the log, and the outbox publishes them
 * again in order. A request that does not parse, a retained one, one for another chain or for seqs the log never
 * assigned, or one within RESEND_EVERY_MS of the last applied for its chain, is ignored (logged at debug).
 */
export class AuditResendHandler implements MqttHandler {
  readonly name = 'audit resend';
  private readonly filters: HandlerSubscription[];
  /** Per chain, when (monotonic ms) a request was last applied. */
  private readonly appliedAt = new Map<string, number>();

  constructor(private readonly deps: AuditResendDeps) {
    this.filters = [{ filter: deps.topics.auditResend, options: { qos: 1, rap: true } }];
  }

  subscriptions(): readonly HandlerSubscription[] {
    return this.filters;
  }

  onMessage(_topic: string, payload: Buffer, packet: IPublishPacket): void {
    const { logger, clock } = this.deps;
    if (packet.retain) return logger.debug('audit resend request ignored: it is retained (a request is never retained)');
    const request = parseResendRequest(payload);
    if ('problem' in request) return logger.debug({ problem: request.problem }, 'audit resend request ignored: it is not one');
    const { chain, from, to } = request;
    const now = clock.monoNow();
    const last = this.appliedAt.get(chain);
    if (last !== undefined && now - last < RESEND_EVERY_MS) {
      return logger.debug({ chain, from, to }, `audit resend request ignored: one was applied less than ${RESEND_EVERY_MS / 1000} s ago`);
    }
    let done: ReturnType<EventLog['republish']>;
    try {
      done = this.deps.events.republish(chain, from, to);
    } catch (err) {
      return logger.warn({ err, chain, from, to }, 'cannot mark audit events to be sent again; the service asks again while its gap stays open');
    }
    if ('ignored' in done) return logger.debug({ chain, from, to }, `audit resend request ignored: ${IGNORED[done.ignored]}`);
    this.appliedAt.set(chain, now);
    logger.info(
      { chain, from, to, resent: done.resent, evicted: done.evicted },
      done.evicted === 0
        ? 'the service asked for audit events again: they are sent again'
        : `the service asked for audit events again: ${done.evicted} of them are no longer in this log (evicted) and cannot be sent again`,
    );
    if (done.resent > 0) this.deps.onRepublished();
  }
}
