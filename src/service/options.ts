/** A door or computer of the organization (the service's `server.resources`). */
export interface ServiceResource {
  resourceId: number;
  /** Lower case. */
  uuid: string;
  type: 'DOOR' | 'COMPUTER';
  name: string;
}

export interface SmtpOptions {
  url: string;
  from: string;
}

/** The reference service's own settings (the `server` section). */
export interface ServerOptions {
  listen: string;
  dataDir: string;
  lockReplyTimeoutSeconds: number;
  resources: ServiceResource[];
  smtp?: SmtpOptions;
}
