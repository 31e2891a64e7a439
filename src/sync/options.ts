/** The access-control service the agent syncs from (the `service` section). */
export interface SyncServiceOptions {
  baseUrl: string;
  apiKeyFile?: string;
  apiKeyIn: 'header' | 'query';
  syncIntervalSeconds: number;
  /** The daemon's first sync waits a random delay up to this (0: at once); a request (MQTT, door-agent sync) never waits. */
  startDelaySeconds: number;
  concurrency: number;
  maxRemovalRatio: number;
  timeoutSeconds: number;
  warnCacheAgeSeconds: number;
}
