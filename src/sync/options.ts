/** The access-control service the agent syncs from (the `service` section). */
export interface SyncServiceOptions {
  baseUrl: string;
  apiKeyFile?: string;
  apiKeyIn: 'header' | 'query';
  syncIntervalSeconds: number;
  concurrency: number;
  maxRemovalRatio: number;
  timeoutSeconds: number;
  warnCacheAgeSeconds: number;
}
