import { DirectoryScan, type DirectoryFindings, type DirectoryRules } from '../core/directoryFindings.js';
import type { Db } from './database.js';

type Row = [number: string, holderKind: 'user' | 'link', holderId: string, label: string | null, digits: string | null];

/**
 * The cache's directory findings (short cards, duress collisions, ambiguous cards and, with rules.minPinLength, the
 * short PINs): one streamed pass over the credentials (a twentieth of importing them). Run after a sync (in the
 * sync worker: it never runs on the door's thread, where 1,000,000 credentials took 100 ms) or an import, and by
 * status and config check.
 */
export function scanDirectory(db: Db, rules: DirectoryRules): DirectoryFindings {
  const scan = new DirectoryScan(rules);
  // A PIN's digits as typed (leading zeros kept) have a column of their own since the cache's schema has one.
  const hasDigits = (db.prepare("SELECT count(*) FROM pragma_table_info('credentials') WHERE name = 'digits'").pluck().get() as number) > 0;
  const rows = db
    .prepare(`SELECT number, holder_kind, holder_id, label, ${hasDigits ? 'digits' : 'NULL'} FROM credentials`)
    .raw(true)
    .iterate() as IterableIterator<Row>;
  for (const [number, holderKind, holderId, label, digits] of rows) scan.add({ number, holderKind, holderId, label, digits });
  return scan.result();
}
