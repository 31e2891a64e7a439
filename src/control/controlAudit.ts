import type { Logger } from 'pino';
import type { Direction } from '../core/areas.js';
import { credentialHint } from '../core/credentials.js';
import type { Credential } from '../readers/reader.js';
import type { NewEvent } from '../store/eventLog.js';
import type { Clock } from '../util/clock.js';

/**
 * What the control socket leaves in the audit log, each event with `origin: local` and the Unix user the request
 * named: `local_command` for every request (carried out, refused, a learn session's start and end), `learn_tap`
 * for each credential a learn session showed instead of deciding (masked as a decision's hint). The relay moves a
 * command makes are the door's own `unlocked` / `locked` events, whose cause names the user.
 */
export class ControlAudit {
  constructor(private readonly deps: { append: (event: NewEvent) => void; clock: Clock; logger: Logger }) {}

  command(door: string | null, user: string, data: Record<string, unknown>): void {
    this.record({ type: 'local_command', door, at: this.deps.clock.wallNow(), data: Object.assign({ origin: 'local', user }, data) });
  }

  tap(door: string, user: string, reader: Direction, credential: Credential): void {
    this.record({
      type: 'learn_tap',
      door,
      at: this.deps.clock.wallNow(),
      data: { origin: 'local', user, reader, kind: credential.kind, hint: credentialHint(credential.value, credential.kind), decided: false },
    });
  }

  private record(event: NewEvent): void {
    try {
      this.deps.append(event);
    } catch (err) {
      this.deps.logger.error({ err, type: event.type }, 'cannot record a local command');
    }
  }
}

/** The cause of a relay move a local command made (the `unlocked` / `locked` event's `cause`), as MQTT's `remote command <id>`. */
export function localCause(user: string): string {
  return `local command by ${user}`;
}
