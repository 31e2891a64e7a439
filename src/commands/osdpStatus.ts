import type { DoorOptions } from '../door/options.js';
import { type RuntimeStatus, readerStatusKey } from '../store/runtimeStatus.js';

/** An OSDP reader's secure channel in `door-agent status`: what the configuration asks for and what is in use. */
export interface OsdpChannelView {
  /** From the configuration: secure (scbkFile), install (SCBK-D, installMode), plain (neither). */
  configured: 'secure' | 'install' | 'plain';
  /** Reported by the running daemon: plain, pending (handshake not done), secure, failed; null when not running. */
  inUse: string | null;
}

/** The channel of the door's entry reader, or of its exit reader (`readers.exit`). */
export function osdpChannelView(
  door: DoorOptions,
  runtime: RuntimeStatus | undefined,
  running: boolean,
  direction: 'entry' | 'exit' = 'entry',
): OsdpChannelView | undefined {
  const reader = direction === 'exit' ? door.exitReader : door.reader;
  if (reader?.type !== 'osdp') return undefined;
  const configured = reader.installMode ? 'install' : reader.scbkFile ? 'secure' : 'plain';
  const reported = running ? runtime?.readerChannels?.[readerStatusKey(door.uuid, direction)] : undefined;
  // A plain reader never reports a change: plain is what it has whenever the daemon runs.
  return { configured, inUse: running ? (reported ?? (configured === 'plain' ? 'plain' : 'pending')) : null };
}

const IN_USE: Record<string, string> = {
  plain: 'PLAIN (no secure channel: a device on the bus can read and inject cards and PINs)',
  pending: 'secure channel not established yet',
  secure: 'secure channel in use',
  failed: 'secure channel FAILED (another key, or no secure channel on the reader): nothing from it is used',
};

/** The words after the reader in status's door line. */
export function osdpChannelText(view: OsdpChannelView | undefined): string {
  if (!view) return '';
  if (view.inUse === null) return `; channel configured ${view.configured}`;
  return `; ${IN_USE[view.inUse] ?? view.inUse}${view.configured === 'install' ? ' (install mode: the public default key)' : ''}`;
}
