import { describe, expect, it } from 'vitest';
import { MAX_REPLY_TOPIC_BYTES, ReplyTopics, replyTopicRefusal } from '../../src/mqtt/replyTopic.js';

// A command names its reply's topic (MQTT 5 response topic) and the agent publishes there with its own login:
// never on a topic where the reply would pass for the agent's own word (docs/mqtt.md).
const OWN = { prefix: 'door-agent', agentId: 'lobby-pi', discoveryPrefix: 'homeassistant' };
const DOOR = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const DEFAULT = `door-agent/doors/${DOOR}/reply`;

function recordingLogger() {
  const warnings: Array<{ fields: Record<string, unknown>; msg: string }> = [];
  const warn = (fields: Record<string, unknown> | string, msg = '') =>
    void warnings.push(typeof fields === 'string' ? { fields: {}, msg: fields } : { fields, msg });
  return { warnings, logger: { warn, info: () => undefined, debug: () => undefined, error: () => undefined } as never };
}

describe('replyTopicRefusal', () => {
  it.each([
    ["the reference service's", 'door-agent/service/replies/4f2a9c'],
    ["an operator's tool's", 'ops/answers'],
    ["another agent's area reply (the ACL decides)", 'door-agent/agents/other-pi/areas/reply'],
    ['one that only starts like the agent id', 'door-agent/agents/lobby-pi-2/inbox'],
    ['one of the longest taken', 'x'.repeat(MAX_REPLY_TOPIC_BYTES)],
  ])('takes %s response topic', (_what, topic) => {
    expect(replyTopicRefusal(topic, OWN)).toBeNull();
  });

  it.each([
    ["the agent's availability", 'door-agent/agents/lobby-pi/status', "it is under this agent's own topics (door-agent/agents/lobby-pi/)"],
    ["the agent's health", 'door-agent/agents/lobby-pi/health', "it is under this agent's own topics (door-agent/agents/lobby-pi/)"],
    ["a door's state", `door-agent/doors/${DOOR}/state`, "it is under the doors' topics (door-agent/doors/)"],
    ["a door's events", `door-agent/doors/${DOOR}/events`, "it is under the doors' topics (door-agent/doors/)"],
    ["a door's availability", `door-agent/doors/${DOOR}/availability`, "it is under the doors' topics (door-agent/doors/)"],
    ["a door's Home Assistant events", `door-agent/doors/${DOOR}/ha/alarm`, "it is under the doors' topics (door-agent/doors/)"],
    ['the events of no door', 'door-agent/doors/agent/events', "it is under the doors' topics (door-agent/doors/)"],
    ['a discovery topic', `homeassistant/lock/lobby-pi_${DOOR}/config`, "it is under Home Assistant's discovery prefix (homeassistant/)"],
    ['an empty topic', '', 'it is empty'],
    ['a filter with +', 'ops/+/answers', 'it has a wildcard (+ or #)'],
    ['a filter with #', 'ops/#', 'it has a wildcard (+ or #)'],
    ['a topic over 1024 bytes', 'é'.repeat(513), 'it is longer than 1024 bytes'],
  ])('refuses %s', (_what, topic, reason) => {
    expect(replyTopicRefusal(topic, OWN)).toBe(reason);
  });

  it('follows the configured prefixes', () => {
    const own = { prefix: 'acme/site-1', agentId: 'a7', discoveryPrefix: 'ha' };
    expect(replyTopicRefusal('acme/site-1/agents/a7/status', own)).not.toBeNull();
    expect(replyTopicRefusal('ha/lock/a7_x/config', own)).not.toBeNull();
    expect(replyTopicRefusal('homeassistant/lock/a7_x/config', own)).toBeNull();
    expect(replyTopicRefusal('door-agent/doors/x/state', own)).toBeNull();
  });
});

describe('ReplyTopics', () => {
  it('replies on the response topic taken, and on the default reply topic without one', () => {
    const { logger, warnings } = recordingLogger();
    const topics = new ReplyTopics({ own: OWN, logger });
    expect(topics.choose('door-agent/service/replies/4f2a9c', DEFAULT)).toBe('door-agent/service/replies/4f2a9c');
    expect(topics.choose(undefined, DEFAULT)).toBe(DEFAULT);
    expect(warnings).toEqual([]);
  });

  it('replies on the default topic instead of a refused one, with one warning per refused topic', () => {
    const { logger, warnings } = recordingLogger();
    const topics = new ReplyTopics({ own: OWN, logger });
    for (let i = 0; i < 3; i++) expect(topics.choose('door-agent/agents/lobby-pi/status', DEFAULT)).toBe(DEFAULT);
    expect(topics.choose('homeassistant/status', DEFAULT)).toBe(DEFAULT);
    expect(warnings).toEqual([
      {
        msg: "a command's response topic refused: the reply goes to the default reply topic",
        fields: {
          responseTopic: 'door-agent/agents/lobby-pi/status',
          reason: "it is under this agent's own topics (door-agent/agents/lobby-pi/)",
          replyTopic: DEFAULT,
        },
      },
      expect.objectContaining({ fields: expect.objectContaining({ responseTopic: 'homeassistant/status' }) }),
    ]);
  });

  it('keeps its warnings bounded whatever topics requesters send: 50, then one line for the rest', () => {
    const { logger, warnings } = recordingLogger();
    const topics = new ReplyTopics({ own: OWN, logger });
    for (let i = 0; i < 200; i++) topics.choose(`door-agent/doors/d${i}/state`, DEFAULT);
    for (let i = 0; i < 5; i++) topics.choose(`${'y'.repeat(2000)}${i}`, DEFAULT);
    expect(warnings).toHaveLength(51);
    expect(warnings[50]!.msg).toBe('more than 50 response topics refused: the others are not logged');
  });

  it('shows at most 200 characters of a refused topic', () => {
    const { logger, warnings } = recordingLogger();
    new ReplyTopics({ own: OWN, logger }).choose('z'.repeat(5000), DEFAULT);
    expect(String(warnings[0]!.fields.responseTopic)).toHaveLength(200);
  });
});
