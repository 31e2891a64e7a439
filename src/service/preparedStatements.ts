import type { Statement } from 'better-sqlite3';
import { statement } from '../util/preparedStatements.js';
import type { ServiceDb as Db } from './database.js';

/**
 * Each SQL text prepared once per connection (util/preparedStatements.ts): a statement prepared per call (per id of
 * a 120,000-id request) once held 800 MB. Returns the prepared statement of a text.
 */
export function preparedStatements(db: Db): (text: string, options?: { pluck?: boolean }) => Statement {
  return (text, options) => statement(db, text, options);
}
