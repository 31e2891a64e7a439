import { runCli } from './cli.js';
import { Daemon } from './daemon.js';
import { Operator } from './operator.js';

/** What a test stops after itself, newest first. */
export type Cleanups = Array<() => Promise<unknown>>;

/** The daemon on `config`, killed at cleanup; resolves once it is ready (and connected to the broker). */
export async function startDaemon(
  config: string,
  cleanups: Cleanups,
  options: { waitConnected?: boolean; timeoutMs?: number; waitFor?: string[] } = {},
): Promise<Daemon> {
  const daemon = new Daemon(config);
  cleanups.push(() => daemon.stop('SIGKILL'));
  await daemon.waitForMessage('door-agent ready', options.timeoutMs);
  for (const message of options.waitFor ?? []) await daemon.waitForMessage(message, options.timeoutMs);
  if (options.waitConnected ?? true) await daemon.waitForMessage('connected to the broker', options.timeoutMs);
  return daemon;
}

/** An MQTT client on the broker at `url`, subscribed to `topics`, ended at cleanup. */
export async function connectOperator(url: string, cleanups: Cleanups, topics: string[] = []): Promise<Operator> {
  const op = await Operator.connect(url);
  cleanups.push(() => op.end());
  if (topics.length > 0) await op.subscribe(...topics);
  return op;
}

/** The agent's audit log (`door-agent events`), oldest first. */
export function auditEvents(config: string): Array<Record<string, unknown>> {
  return runCli(['events', '--config', config])
    .stdout.trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
