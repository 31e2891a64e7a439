import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { seconds } from './doorSchema.js';

// The fleet's settings (docs/fleet.md): the agent's `fleet` section and the service's `server.fleet`.

/**
 * The agent's link to the fleet (docs/fleet.md): the service's public key (what signs its configuration) and the
 * release key, both pinned at enrolment, and how often it asks the service.
 */
export const fleetSchema = z.strictObject({
  servicePublicKeyFile: z.string().min(1),
  releasePublicKeyFile: z.string().min(1).optional(),
  // 10 s or more on a site (docs/fleet.md); down to 1 s for a test's short exchanges.
  pollSeconds: seconds(1, 3600).default(60),
});

/** The service's side (`server.fleet`): agents enrol with a code and are adopted by an operator. */
export const fleetServerSchema = z.strictObject({
  /** The service's identity key (Ed25519, PKCS#8 PEM, 0600): it signs what the service hands an agent. */
  identityKeyFile: z.string().min(1),
  /** The release key's public half (SPKI PEM), pinned on each agent at enrolment; absent: grants carry none. */
  releasePublicKeyFile: z.string().min(1).optional(),
  /** How long an enrolment code is good for. */
  enrolCodeHours: wholeNumber().min(1).max(720).default(24),
  /** The largest release bundle the service takes (PUT /fleet/releases), in MiB. */
  maxBundleMegabytes: wholeNumber().min(1).max(1024).default(200),
  /** The agents' MQTT logins, made in mosquitto's dynamic security plugin over the service's own connection. */
  agentMqtt: z
    .strictObject({
      /** The broker as the agents reach it. */
      url: z.url({ protocol: /^(mqtts?|wss?)$/, error: 'must be an mqtt://, mqtts://, ws:// or wss:// URL' }),
      /** The dynamic security role each agent's login is given. */
      role: z.string().min(1).max(128).default('door-agent'),
    })
    .optional(),
});
