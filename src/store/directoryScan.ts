import { DirectoryScan, type DirectoryFindings, type DirectoryRules } from '../core/directoryFindings.js';
import type { Db } from './database.js';
import { countShortPins } from './pinCensus.js';

type Row = [number: string, holderKind: 'user' | 'link', holderId: string, label: string | null];

/**
 * The cache's directory findings (short cards, duress collisions): one streamed pass over the credentials (a
 * twentieth of importing them), and with rules.minPinLength the short PINs counted (a query of its own over the
 * same table). Run after a sync (in the sync worker: neither pass ever runs on the door's thread, where 1,000,000
 * credentials took 100 ms) or an import, and by status and config check.
 */
export function scanDirectory(db: Db, rules: DirectoryRules): DirectoryFindings {
  const scan = new DirectoryScan(rules);
  const rows = db.prepare('SELECT number, holder_kind, holder_id, label FROM credentials').raw(true).iterate() as IterableIterator<Row>;
  for (const [number, holderKind, holderId, label] of rows) scan.add({ number, holderKind, holderId, label });
  const findings = scan.result();
  if (rules.minPinLength === undefined) return findings;
  return { ...findings, shortPins: { count: countShortPins(db, rules.pinLabels, rules.minPinLength), minLength: rules.minPinLength } };
}
