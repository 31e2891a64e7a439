import type { AgentOptions } from '../config/options.js';
import type { EmergencyRuntime, RuntimeStatus } from '../store/runtimeStatus.js';

/** The emergency input as `status` and `config check` show it: its wiring, the doors it releases and those it does not. */
export interface EmergencyView {
  pin: number;
  confirmPin: number | null;
  /** The level of `pin` that means alarm (the loop open). */
  activeLevel: 0 | 1;
  pull: string;
  debounceMs: number;
  /** Door names. */
  releases: string[];
  notReleased: string[];
  /** As the running daemon reads it; null when no daemon runs (or it has not read it yet). */
  now: EmergencyRuntime | null;
}

export function emergencyView(config: AgentOptions, runtime: RuntimeStatus | undefined, running: boolean): EmergencyView | null {
  const e = config.emergency;
  if (!e) return null;
  return {
    pin: e.pin,
    confirmPin: e.confirmPin,
    activeLevel: e.activeLevel,
    pull: e.pull,
    debounceMs: e.debounceMs,
    releases: config.doors.filter((d) => d.emergencyRelease).map((d) => d.name),
    notReleased: config.doors.filter((d) => !d.emergencyRelease).map((d) => d.name),
    now: running ? (runtime?.emergency ?? null) : null,
  };
}

const READINGS: Record<EmergencyRuntime['reading'], string> = {
  normal: 'normal (loop closed)',
  alarm: 'ACTIVE: the loop is open (the fire alarm, or a cut wire)',
  wiring_open: 'ACTIVE: WIRING FAULT, both contacts open (the common wire cut?)',
  wiring_short: 'ACTIVE: WIRING FAULT, both contacts closed (a short, or a welded contact?)',
};

function wiringLine(view: EmergencyView): string {
  return (
    `GPIO ${view.pin} (loop open = level ${view.activeLevel} = alarm; pull ${view.pull}, debounce ${view.debounceMs} ms)` +
    (view.confirmPin === null
      ? '; no confirmPin: a cut wire reads as an alarm, and cannot be told from one'
      : `; confirmPin GPIO ${view.confirmPin} (the relay's normally-open contact: a cut wire or a short is told apart)`)
  );
}

function doorsLine(view: EmergencyView, indent: string): string {
  return `${indent}  releases: ${view.releases.join(', ') || 'no door'}; does NOT release: ${view.notReleased.join(', ') || 'none (every door is released)'}`;
}

/** `config check`: the wiring and which doors it releases. */
export function emergencyConfigLines(view: EmergencyView | null, indent = '  '): string[] {
  if (!view) return [];
  return [`${indent}emergency input ${wiringLine(view)}`, doorsLine(view, indent)];
}

/** `status`: the input now (as the daemon reads it), and which doors it releases. */
export function emergencyStatusLines(view: EmergencyView | null, daemonRunning: boolean): string[] {
  if (!view) return [];
  const now = view.now;
  const state = now ? `${READINGS[now.reading]} since ${now.since}` : daemonRunning ? 'not read yet' : 'not read (the daemon is not running)';
  return [
    `emergency input: ${state}`,
    `  ${wiringLine(view)}`,
    doorsLine(view, ''),
    ...(now?.wiringFault
      ? [
          `WARNING: emergency input wiring fault (${now.wiringFault === 'open' ? 'both contacts open' : 'both contacts closed'}): its doors stay released; check the loop`,
        ]
      : []),
  ];
}
