import type { Statement } from 'better-sqlite3';
import type { ServiceDb as Db } from './database.js';

/**
 * Each SQL text prepared once per store: a statement prepared per call (per id of a 120,000-id request) once held
 * 800 MB. Returns the prepared statement of a text.
 */
export function preparedStatements(db: Db): (text: string) => Statement {
  const statements = new Map<string, Statement>();
  return (text) => {
    let statement = statements.get(text);
    if (statement === undefined) {
      statement = db.prepare(text);
      statements.set(text, statement);
    }
    return statement;
  };
}
