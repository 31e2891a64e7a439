import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';

/** Every row of the cache tables, for "the cache is unchanged" assertions. */
export function dumpCache(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    const tables = ['users', 'credentials', 'guest_links'];
    return JSON.stringify(tables.map((t) => db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all()));
  } finally {
    db.close();
  }
}

export function sha256File(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/**
 * Installs triggers that count every insert, update and delete on the cache tables, so a test can prove
 * that an operation wrote no rows.
 */
export function installWriteCounter(file: string): () => number {
  const db = new Database(file);
  db.exec('CREATE TABLE IF NOT EXISTS write_counter (n INTEGER NOT NULL); INSERT INTO write_counter VALUES (0);');
  for (const table of ['users', 'credentials', 'guest_links']) {
    for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
      db.exec(`CREATE TRIGGER IF NOT EXISTS count_${table}_${op} AFTER ${op} ON ${table}
               BEGIN UPDATE write_counter SET n = n + 1; END`);
    }
  }
  db.close();
  return () => {
    const reader = new Database(file, { readonly: true });
    try {
      return (reader.prepare('SELECT n FROM write_counter').get() as { n: number }).n;
    } finally {
      reader.close();
    }
  };
}
