import type { AgentOptions } from '../config/options.js';

/** A door's name (doors are named by uuid in the options of areas and interlocks). */
function doorName(config: AgentOptions, uuid: string): string {
  return config.doors.find((d) => d.uuid === uuid)?.name ?? uuid;
}

/** `config check`: each area, interlock and two-person door (docs/areas.md). */
export function doorGroupLines(config: AgentOptions, indent = '  '): string[] {
  const areas = (config.areas ?? []).map((area) => {
    const { mode, rule, seconds } = area.antiPassback;
    const passback = mode === 'off' ? 'anti-passback off' : `anti-passback ${mode} ${rule === 'timed' ? `timed (${seconds} s)` : 'in/out'}`;
    return (
      `${indent}area ${area.id}${area.name !== area.id ? ` (${area.name})` : ''}: doors ${area.doors.map((d) => doorName(config, d)).join(', ')}; ${passback}; ` +
      `${area.maxOccupancy === null ? 'no maximum' : `at most ${area.maxOccupancy} inside`}; ` +
      `${area.resetAt === null ? 'reset by command only' : `reset daily at ${area.resetAt} (${config.agent.timezone})`}`
    );
  });
  const interlocks = (config.interlocks ?? []).map(
    (interlock) => `${indent}interlock: ${interlock.doors.map((d) => doorName(config, d)).join(', ')} (one unlocked or open at a time)`,
  );
  const twoPerson = config.doors.flatMap((d) =>
    d.twoPerson ? [`${indent}two-person rule at ${d.name}: two different holders within ${d.twoPerson.windowSeconds} s`] : [],
  );
  return [...areas, ...interlocks, ...twoPerson];
}
