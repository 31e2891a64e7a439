import { zonedClock } from '../util/zonedClock.js';

/** The demo's times, as the console shows them: 24-hour, in one zone (the agent's agent.timezone), `14:05:09`. */
export function clockTime(timeZone: string): (at: number | string) => string {
  const clock = zonedClock(timeZone);
  return (at) => {
    const instant = new Date(at);
    return Number.isNaN(instant.getTime()) ? String(at) : clock(instant.getTime()).time;
  };
}
