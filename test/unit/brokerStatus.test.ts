import { describe, expect, it } from 'vitest';
import { brokerLines, brokerStatus } from '../../src/commands/brokerStatus.js';

const refusal = { topic: 'da/doors/d1/events', kind: 'publish' as const, reasonCode: 0x87, reason: 'not authorized', since: '2026-11-24T09:00:00.000Z' };
const runtime = { pid: 1, startedAt: '2026-11-24T08:00:00.000Z', stoppedAt: null, readers: {}, refused: [refusal] };

describe('door-agent status: the broker', () => {
  it('lists the refused topics while the daemon runs, with the reason code in hex', () => {
    expect(brokerStatus(runtime, true)).toEqual({ refused: [refusal] });
    expect(brokerStatus(runtime, false)).toEqual({ refused: [] }); // a stopped daemon's list is stale
    expect(brokerLines([refusal], 0, 1000)).toEqual([
      'refused by the broker (1; fix its ACL, reload it: the agent retries by itself):',
      '  publish da/doors/d1/events: 0x87 not authorized since 2026-11-24T09:00:00.000Z',
    ]);
  });

  it('warns when unpublished events keep the audit log past maxEvents', () => {
    expect(brokerLines([], 500, 1000)).toEqual([
      'WARNING: the audit log is past agent.maxEvents (1000): 500 older events not yet published are kept until the broker has them',
    ]);
    expect(brokerLines([], 1, 1000)).toEqual([
      'WARNING: the audit log is past agent.maxEvents (1000): 1 older event not yet published is kept until the broker has them',
    ]);
    expect(brokerLines([], 0, 1000)).toEqual([]);
  });
});
