import { describe, expect, it } from 'vitest';
import { Topics } from '../../src/protocol/topics.js';

const DOOR = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const t = new Topics('acme/site-1', 'agent-7');

describe('topic builders (docs/mqtt.md)', () => {
  it.each([
    ['set', t.set(DOOR), `acme/site-1/doors/${DOOR}/set`],
    ['reply', t.reply(DOOR), `acme/site-1/doors/${DOOR}/reply`],
    ['state', t.state(DOOR), `acme/site-1/doors/${DOOR}/state`],
    ['events', t.events(DOOR), `acme/site-1/doors/${DOOR}/events`],
    ['status', t.status, 'acme/site-1/agents/agent-7/status'],
    ['sync', t.sync, 'acme/site-1/agents/agent-7/sync'],
    ['guest links subscription', t.guestLinks, 'acme/site-1/guest-links/+'],
  ])('%s', (_name, actual, expected) => {
    expect(actual).toBe(expected);
  });

  it('keeps the prefix and agent id it was built with', () => {
    expect(t.prefix).toBe('acme/site-1');
    expect(t.agentId).toBe('agent-7');
  });

  it('works with the default single-level prefix', () => {
    const d = new Topics('door-agent', 'a');
    expect(d.set(DOOR)).toBe(`door-agent/doors/${DOOR}/set`);
    expect(d.status).toBe('door-agent/agents/a/status');
  });
});

describe('doorOfCommand', () => {
  it('returns the door of a command topic, as written', () => {
    expect(t.doorOfCommand(t.set(DOOR))).toBe(DOOR);
    expect(t.doorOfCommand(t.set(DOOR.toUpperCase()))).toBe(DOOR.toUpperCase());
  });

  it('round-trips with set()', () => {
    for (const id of ['x', 'door_1', DOOR]) expect(t.doorOfCommand(t.set(id))).toBe(id);
  });

  it.each([
    ['another prefix', `other/doors/${DOOR}/set`],
    ['a prefix that only starts like ours', `acme/site-10/doors/${DOOR}/set`],
    ['our prefix nested under another level', `x/acme/site-1/doors/${DOOR}/set`],
    ['only the first level of the prefix', `acme/doors/${DOOR}/set`],
    ['the reply topic', t.reply(DOOR)],
    ['the state topic', t.state(DOOR)],
    ['the events topic', t.events(DOOR)],
    ['an extra level before set', `acme/site-1/doors/${DOOR}/extra/set`],
    ['an extra level after set', `acme/site-1/doors/${DOOR}/set/extra`],
    ['a trailing slash', `acme/site-1/doors/${DOOR}/set/`],
    ['a guest link topic', `acme/site-1/guest-links/${DOOR}`],
    ['the agent status topic', t.status],
  ])('rejects %s', (_name, topic) => {
    expect(t.doorOfCommand(topic)).toBeNull();
  });

  it.each([
    ['an empty door id', 'acme/site-1/doors//set'],
    ['no door level at all', 'acme/site-1/doors/set'],
  ])('rejects %s', (_name, topic) => {
    expect(t.doorOfCommand(topic)).toBeNull();
  });
});

describe('guestLinkOf', () => {
  it('returns the magic_link_id of a guest link topic', () => {
    expect(t.guestLinkOf('acme/site-1/guest-links/42')).toBe('42');
    expect(t.guestLinkOf('acme/site-1/guest-links/ml_ABC-def')).toBe('ml_ABC-def');
  });

  it.each([
    ['another prefix', 'other/guest-links/42'],
    ['a prefix that only starts like ours', 'acme/site-10/guest-links/42'],
    ['our prefix nested under another level', 'x/acme/site-1/guest-links/42'],
    ['an empty id', 'acme/site-1/guest-links/'],
    ['no id level', 'acme/site-1/guest-links'],
    ['an extra level', 'acme/site-1/guest-links/42/extra'],
    ['a trailing slash after the id', 'acme/site-1/guest-links/42/'],
    ['a door command topic', `acme/site-1/doors/${DOOR}/set`],
  ])('rejects %s', (_name, topic) => {
    expect(t.guestLinkOf(topic)).toBeNull();
  });
});
