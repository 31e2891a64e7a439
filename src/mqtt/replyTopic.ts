import type { Logger } from 'pino';

/** The longest response topic replied on (MQTT allows 65,535 bytes; a requester's reply topic is short). @internal */
export const MAX_REPLY_TOPIC_BYTES = 1024;
/** The most refused response topics warned about, one warning each; past it one warning says the rest are not. */
const MAX_WARNED = 50;
/** How much of a refused topic a warning shows. */
const LOGGED_TOPIC_CHARS = 200;

/** Where this agent publishes on its own (its ACL lets it write there, and others should not). */
export interface OwnPublishing {
  /** mqtt.topicPrefix */
  prefix: string;
  agentId: string;
  /** mqtt.homeAssistant.prefix */
  discoveryPrefix: string;
}

/**
 * Why a command's MQTT 5 response topic is not replied on, or null when it is. The requester names it, and the
 * agent publishes with its own broker login: so only a valid publish topic outside the agent's own publishing
 * space (its status, its doors' state and events, Home Assistant's discovery) is taken, never one where a reply
 * would pass for the agent's own word. The reference service's `P/service/replies/<random>` is outside it.
 * @internal
 */
export function replyTopicRefusal(topic: string, own: OwnPublishing): string | null {
  if (topic === '') return 'it is empty';
  if (Buffer.byteLength(topic, 'utf8') > MAX_REPLY_TOPIC_BYTES) return `it is longer than ${MAX_REPLY_TOPIC_BYTES} bytes`;
  if (topic.includes('+') || topic.includes('#')) return 'it has a wildcard (+ or #)';
  if (topic.includes('\u0000')) return 'it has a NUL character';
  const under = (base: string) => topic === base || topic.startsWith(`${base}/`);
  const agent = `${own.prefix}/agents/${own.agentId}`;
  if (under(agent)) return `it is under this agent's own topics (${agent}/)`;
  if (under(`${own.prefix}/doors`)) return `it is under the doors' topics (${own.prefix}/doors/)`;
  if (under(own.discoveryPrefix)) return `it is under Home Assistant's discovery prefix (${own.discoveryPrefix}/)`;
  return null;
}

/**
 * The topic each command's reply goes to (door commands, area resets): the response topic the command names when
 * replyTopicRefusal takes it, else the default reply topic, with one warning per refused topic.
 */
export class ReplyTopics {
  private readonly warned = new Set<string>();
  private overflowed = false;

  constructor(private readonly deps: { own: OwnPublishing; logger: Logger }) {}

  choose(responseTopic: string | undefined, defaultTopic: string): string {
    if (responseTopic === undefined) return defaultTopic;
    const refusal = replyTopicRefusal(responseTopic, this.deps.own);
    if (refusal === null) return responseTopic;
    this.warn(responseTopic, refusal, defaultTopic);
    return defaultTopic;
  }

  private warn(responseTopic: string, reason: string, replyTopic: string): void {
    // Over-long topics share one key: the set stays small whatever a requester sends.
    const key = Buffer.byteLength(responseTopic, 'utf8') > MAX_REPLY_TOPIC_BYTES ? '' : responseTopic;
    if (this.warned.has(key)) return;
    if (this.warned.size >= MAX_WARNED) {
      if (!this.overflowed) this.deps.logger.warn(`more than ${MAX_WARNED} response topics refused: the others are not logged`);
      this.overflowed = true;
      return;
    }
    this.warned.add(key);
    this.deps.logger.warn(
      { responseTopic: responseTopic.slice(0, LOGGED_TOPIC_CHARS), reason, replyTopic },
      "a command's response topic refused: the reply goes to the default reply topic",
    );
  }
}
