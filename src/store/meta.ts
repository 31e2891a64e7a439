import type { Db } from './database.js';
import { statement } from '../util/preparedStatements.js';

/** Small key/value facts about the cache (last import, last sync), stored as JSON. */
export function readMeta<T>(db: Db, key: string): T | undefined {
  const text = readMetaText(db, key);
  return text === undefined ? undefined : (JSON.parse(text) as T);
}

/** The stored JSON text, undefined when absent: to tell cheaply whether a value changed. */
export function readMetaText(db: Db, key: string): string | undefined {
  return statement(db, 'SELECT value FROM meta WHERE key = ?', { pluck: true }).get(key) as string | undefined;
}

export function writeMeta(db: Db, key: string, value: unknown): void {
  statement(db, 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, JSON.stringify(value));
}
