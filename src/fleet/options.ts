/**
 * The agent's link to the fleet (the `fleet` section; docs/fleet.md): the keys pinned at enrolment and how often it
 * asks the service for its configuration.
 */
export interface FleetOptions {
  /** The service's identity key (SPKI PEM): what signs the configuration versions the agent takes. */
  servicePublicKeyFile: string;
  /** The release key (SPKI PEM): what signs the release bundles the agent installs; absent: none was given. */
  releasePublicKeyFile?: string;
  /** How often the agent asks the service (1 to 3600 s, with jitter; 10 or more on a site). */
  pollSeconds: number;
}
