import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from '../support/configProblems.js';

const config = (zone: string) => `agent: { id: t1, dataDir: /tmp/door-agent-tz, timezone: ${zone} }
access: { groups: [Staff] }
gpio: { driver: chardev }
doors:
  - uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d
    resourceId: 12
    relay: { pin: 17 }
`;

describe('agent.timezone', () => {
  it("takes ICU's canonical zones and its aliases alike (UTC, US/Eastern, a renamed zone)", () => {
    for (const zone of ['Europe/Berlin', 'America/Argentina/Buenos_Aires', 'UTC', 'Etc/UTC', 'US/Eastern', 'Asia/Calcutta', 'Asia/Kolkata', 'Europe/Kyiv']) {
      expect(parseConfig(config(zone), 't').agent.timezone, zone).toBe(zone);
    }
  });

  it('refuses a zone ICU does not know, naming the key', () => {
    for (const zone of ['Mars/Olympus', 'Europe/berlin_', 'GMT+25']) {
      expect(configProblems(config(zone)), zone).toEqual(['agent.timezone: not an IANA time zone (e.g. Europe/Berlin)']);
    }
  });
});
