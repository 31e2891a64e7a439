import { describe, expect, it } from 'vitest';
import { mergeUnderBoard } from '../../src/fleet/boardMerge.js';
import { appliesLive, differences, pathText } from '../../src/fleet/liveChanges.js';

// docs/fleet.md, "Configuration from the service": the service's document under the board file, and which
// differences the agent takes while it runs.

describe('the document merged under the board file', () => {
  it('lets every key the board sets win, at any depth, merges sections both set, and replaces lists whole', () => {
    const document = {
      agent: { id: 'not-this-one', logLevel: 'debug', timezone: 'Europe/Paris' },
      access: { groups: ['Staff', 'Night'] },
      doors: [
        { uuid: 'a', relay: { pin: 17 } },
        { uuid: 'b', relay: { pin: 18 } },
      ],
      service: { baseUrl: 'https://elsewhere.example.org', syncIntervalSeconds: 60 },
    };
    const board = {
      agent: { id: 'lobby', dataDir: '/var/lib/door-agent' },
      access: { groups: ['Caretakers'] },
      service: { baseUrl: 'https://access.example.org', apiKeyFile: '/etc/door-agent/api-key' },
      fleet: { servicePublicKeyFile: '/etc/door-agent/service.pub' },
    };
    expect(mergeUnderBoard(document, board)).toEqual({
      agent: { id: 'lobby', dataDir: '/var/lib/door-agent', logLevel: 'debug', timezone: 'Europe/Paris' },
      access: { groups: ['Caretakers'] },
      doors: document.doors,
      service: { baseUrl: 'https://access.example.org', apiKeyFile: '/etc/door-agent/api-key', syncIntervalSeconds: 60 },
      fleet: board.fleet,
    });
    // A list the board sets is the board's, whole: never merged item by item.
    expect(mergeUnderBoard({ doors: document.doors }, { doors: [{ uuid: 'c' }] })).toEqual({ doors: [{ uuid: 'c' }] });
    // The inputs are left as they were.
    expect(document.agent.id).toBe('not-this-one');
  });

  it('keeps a key named __proto__ as data, never as the prototype', () => {
    const merged = mergeUnderBoard(JSON.parse('{"__proto__": {"polluted": true}, "agent": {}}'), { agent: { id: 'x' } }) as Record<string, unknown>;
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((merged as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.hasOwn(merged, '__proto__')).toBe(true);
  });
});

describe('what changes live', () => {
  const running = {
    agent: { id: 'lobby', logLevel: 'info' },
    doors: [
      { uuid: 'a', unlockSeconds: 5, maxUnlockSeconds: 0, heldOpenSeconds: 30, relay: { pin: 17 } },
      { uuid: 'b', unlockSeconds: 5, maxUnlockSeconds: 0, heldOpenSeconds: 30, relay: { pin: 18 } },
    ],
  };
  const changed = (change: (c: typeof running) => void) => {
    const next = structuredClone(running);
    change(next);
    return differences(running, next);
  };

  it('is the log level and each existing door unlockSeconds, maxUnlockSeconds and heldOpenSeconds', () => {
    const live = changed((c) => {
      c.agent.logLevel = 'debug';
      c.doors[0]!.unlockSeconds = 8;
      c.doors[1]!.maxUnlockSeconds = 600;
      c.doors[1]!.heldOpenSeconds = 60;
    });
    expect(live.map(pathText)).toEqual(['agent.logLevel', 'doors[0].unlockSeconds', 'doors[1].maxUnlockSeconds', 'doors[1].heldOpenSeconds']);
    expect(live.every(appliesLive)).toBe(true);
    expect(differences(running, structuredClone(running))).toEqual([]);
  });

  it('is nothing else: a relay, a door added, removed or swapped, another section restart', () => {
    expect(changed((c) => (c.doors[0]!.relay.pin = 22)).map(pathText)).toEqual(['doors[0].relay.pin']);
    expect(changed((c) => c.doors.pop()).map(pathText)).toEqual(['doors']);
    expect(changed((c) => c.doors.reverse()).some((p) => !appliesLive(p))).toBe(true);
    expect(changed((c) => Object.assign(c, { mqtt: { url: 'mqtt://broker' } })).map(pathText)).toEqual(['mqtt']);
    for (const c of [changed((c) => (c.doors[0]!.relay.pin = 22)), changed((c) => c.doors.pop()), changed((c) => (c.agent.id = 'other'))])
      expect(c.every(appliesLive)).toBe(false);
  });
});
