import type { BrokerRefusal, RuntimeStatus } from '../store/runtimeStatus.js';

/** What `door-agent status` says about the broker's refusals (while the daemon runs) and an outbox kept past maxEvents. */
export function brokerStatus(runtime: RuntimeStatus | undefined, running: boolean): { refused: BrokerRefusal[] } {
  return { refused: running ? (runtime?.refused ?? []) : [] };
}

/** `keptPastWindow`: unpublished events older than the maxEvents window (EventLog.keptPastWindow). */
export function brokerLines(refused: readonly BrokerRefusal[], keptPastWindow: number, maxEvents: number): string[] {
  const lines = refused.length
    ? [
        `refused by the broker (${refused.length}; fix its ACL, reload it: the agent retries by itself):`,
        ...refused.map(
          (r) =>
            `  ${r.kind} ${r.topic}: 0x${r.reasonCode.toString(16)} ${r.reason} since ${r.since}${r.kind === 'publish' ? '' : ' (its messages do not arrive)'}`,
        ),
      ]
    : [];
  if (keptPastWindow > 0) {
    lines.push(
      `WARNING: the audit log is past agent.maxEvents (${maxEvents}): ${keptPastWindow === 1 ? '1 older event not yet published is' : `${keptPastWindow} older events not yet published are`} kept until the broker has them`,
    );
  }
  return lines;
}
