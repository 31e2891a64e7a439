import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as z from 'zod';
import { signedConfigSchema } from '../api/fleet.js';
import { describeFsError, errorCode } from '../util/errors.js';
import { problemsInOneLine } from '../util/issues.js';
import { writeWhole } from '../util/wholeFile.js';

/**
 * The configuration versions an agent keeps (docs/fleet.md, "Configuration from the service"):
 * `<dataDir>/fleet/applied.json`, the version it runs, and `previous.json`, the one before it. Each is the signed
 * version as the service delivered it (agent id, version, document, SHA-256, signature), so that it can be
 * checked again at start. Each file is replaced whole or not at all (a new file renamed over the old one).
 */

export type KeptConfig = z.infer<typeof signedConfigSchema>;
export type KeptName = 'applied' | 'previous';

/** `<dataDir>/fleet`: the fleet's files on the board. */
export const fleetDir = (dataDir: string) => join(dataDir, 'fleet');
/** Where the daemon downloads an update's bundle and a reader's firmware file. */
export const downloadsDir = (dataDir: string) => join(fleetDir(dataDir), 'downloads');
export const keptConfigPath = (dataDir: string, name: KeptName) => join(fleetDir(dataDir), `${name}.json`);

/** What is kept under `name`: the version, none (`null`), or why the file cannot be used. */
export type KeptRead = { kept: KeptConfig } | { kept: null } | { unusable: string };

export function readKeptConfig(dataDir: string, name: KeptName): KeptRead {
  const path = keptConfigPath(dataDir, name);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { kept: null };
    return { unusable: `cannot read ${path}: ${describeFsError(err)}` };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { unusable: `${path} is not JSON: ${(err as Error).message}` };
  }
  const parsed = signedConfigSchema.safeParse(data);
  if (!parsed.success) return { unusable: `${path} is not a kept configuration version: ${problemsInOneLine(parsed.error.issues)}` };
  return { kept: parsed.data };
}

/**
 * Keeps `config` as the applied version, and `running` (the version it replaces; null: the board file alone, then
 * previous.json stays as it is) as the previous one. Every step leaves a whole applied.json in place: a power cut
 * keeps the old version or the new one, never a torn file.
 */
export function keepAppliedConfig(dataDir: string, config: KeptConfig, running: KeptConfig | null): void {
  mkdirSync(fleetDir(dataDir), { recursive: true, mode: 0o700 });
  if (running !== null) writeWhole(keptConfigPath(dataDir, 'previous'), `${JSON.stringify(running)}\n`);
  writeWhole(keptConfigPath(dataDir, 'applied'), `${JSON.stringify(config)}\n`);
}
