import { writeFileSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './cli.js';

export interface Snapshot {
  users: Array<Record<string, unknown>>;
  details: Record<string, Record<string, unknown>>;
  guest_links?: Array<Record<string, unknown>>;
  [key: string]: unknown;
}

/** The demo organization of examples/snapshot.json (fresh copy each call, safe to modify). */
export function exampleSnapshot(): Snapshot {
  return JSON.parse(readFileSync(join(ROOT, 'examples/snapshot.json'), 'utf8')) as Snapshot;
}

export function writeSnapshot(dir: string, name: string, snapshot: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof snapshot === 'string' ? snapshot : JSON.stringify(snapshot, null, 1));
  return path;
}
