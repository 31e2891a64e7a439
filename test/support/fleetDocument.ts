import { DOOR_UUID } from './cli.js';

/**
 * A configuration version as an operator keeps it at the service (docs/fleet.md): one door, its unlock time (a
 * live setting), and `extra` YAML appended; `gpio` when the test wants the simulated driver named in the version.
 */
export function fleetDocument(unlockSeconds: number, extra = '', gpio = true): string {
  return `access: { groups: [Staff] }
${gpio ? 'gpio: { driver: simulated, simulatedDir: /run/door-agent/gpio }\n' : ''}doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
    unlockSeconds: ${unlockSeconds}
${extra}`;
}
