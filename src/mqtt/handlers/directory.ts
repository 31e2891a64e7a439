import type { IPublishPacket } from 'mqtt';
import type { Logger } from 'pino';
import type { Topics } from '../../protocol/topics.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';

export interface DirectoryHandlerDeps {
  topics: Topics;
  logger: Logger;
  /** `P/agents/<id>/sync` arrived (absent without a service: logged). */
  onSyncRequest?: () => void;
  /** A `P/directory/revision` message (only subscribed when given: with a service configured). */
  onDirectoryRevision?: (payload: Buffer) => void;
}

/**
 * The directory's triggers in: `P/agents/<id>/sync` (any payload, not retained: sync now) and the service's retained
 * `P/directory/revision` (protocol/directory.ts), both handed to the sync component.
 */
export class DirectoryHandler implements MqttHandler {
  readonly name = 'directory';
  private readonly filters: HandlerSubscription[];

  constructor(private readonly deps: DirectoryHandlerDeps) {
    const { topics } = deps;
    this.filters = [topics.sync, ...(deps.onDirectoryRevision ? [topics.directoryRevision] : [])].map((filter) => ({ filter, options: { qos: 1, rap: true } }));
  }

  subscriptions(): readonly HandlerSubscription[] {
    return this.filters;
  }

  onMessage(topic: string, payload: Buffer, packet: IPublishPacket): void {
    const { topics } = this.deps;
    if (topic === topics.directoryRevision) return this.deps.onDirectoryRevision?.(payload);
    if (topic === topics.sync) {
      if (packet.retain) return;
      if (this.deps.onSyncRequest) this.deps.onSyncRequest();
      else this.deps.logger.info('sync requested over MQTT, but no service is configured: nothing to sync');
    }
  }
}
