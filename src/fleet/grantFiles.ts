import type { KeyObject } from 'node:crypto';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import type { Grant } from '../api/fleet.js';
import { publicKeyFromRaw } from '../protocol/fleetSigning.js';
import type { BoardFiles } from './boardFiles.js';

/** Where an enrolment writes, beside the configuration file (docs/fleet.md, "Enrolment"). */
export function grantPaths(configFile: string) {
  const dir = dirname(configFile);
  return {
    config: configFile,
    secrets: join(dir, 'secrets'),
    apiKey: join(dir, 'secrets', 'service.key'),
    mqttPassword: join(dir, 'secrets', 'mqtt.password'),
    keys: join(dir, 'fleet'),
    servicePub: join(dir, 'fleet', 'service.pub'),
    releasePub: join(dir, 'fleet', 'release.pub'),
  };
}

/** The board's configuration file of a grant: its id, its data, the service, its broker login and its fleet section. */
function boardConfigText(grant: Grant, dataDir: string, configFile: string, at: Date): string {
  const paths = grantPaths(configFile);
  const config = {
    agent: { id: grant.agent_id, dataDir },
    service: { baseUrl: grant.service_url, apiKeyFile: paths.apiKey },
    ...(grant.mqtt ? { mqtt: { url: grant.mqtt.url, username: grant.mqtt.username, passwordFile: paths.mqttPassword } } : {}),
    fleet:
      grant.release_key === null
        ? { servicePublicKeyFile: paths.servicePub }
        : { servicePublicKeyFile: paths.servicePub, releasePublicKeyFile: paths.releasePub },
  };
  return (
    `# Written by door-agent enrol at ${at.toISOString()}: agent ${grant.agent_id} of ${grant.service_url}.\n` +
    '# Its doors and the rest come from the service (docs/fleet.md); what this file sets wins over them.\n' +
    stringify(config)
  );
}

const pem = (key: KeyObject) => key.export({ format: 'pem', type: 'spki' }).toString();

/**
 * Writes what a grant gives the board, each file whole: the DOOR key and the MQTT password (0600, in secrets/,
 * 0700), the service's and the release's public keys (0644, root's, in fleet/), then the configuration file (0640) that
 * names them, once `check` (the configuration's own check) has passed on its text. Any failure takes back every
 * file written, so a board is configured entirely or not at all.
 */
export function writeGrantFiles(
  files: BoardFiles,
  grant: Grant,
  serviceKey: KeyObject,
  where: { configFile: string; dataDir: string; at: Date },
  check: (configText: string) => void,
): void {
  const paths = grantPaths(where.configFile);
  const text = boardConfigText(grant, where.dataDir, where.configFile, where.at);
  try {
    check(text);
    files.dir(dirname(where.configFile), 0o755, false);
    files.dir(paths.secrets, 0o700);
    files.file(paths.apiKey, `${grant.api_key}\n`, 0o600);
    if (grant.mqtt) files.file(paths.mqttPassword, `${grant.mqtt.password}\n`, 0o600);
    // Root's, not the agent's: the release key decides what `update apply` (root) installs, and the agent's user
    // must not be able to choose it.
    files.dir(paths.keys, 0o755, false);
    files.file(paths.servicePub, pem(serviceKey), 0o644, 'group');
    const release = grant.release_key === null ? null : publicKeyFromRaw(grant.release_key);
    if (release) files.file(paths.releasePub, pem(release), 0o644, 'group');
    files.file(where.configFile, text, 0o640, 'group');
  } catch (err) {
    files.takeBack();
    throw err;
  }
  files.keep();
}
