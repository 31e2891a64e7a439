import { DoorAgentError } from '../../util/errors.js';

/**
 * The database could not be reached (PostgreSQL stopped, restarting, out of connections, the network between):
 * the request is answered 503 with a Retry-After, the doors keep deciding from their caches, and the service
 * recovers by itself when the database is back. Nothing of the request was applied.
 */
export class DatabaseUnavailable extends DoorAgentError {}

/** SQLSTATE classes and codes that say "not reachable now", not "this statement is wrong". */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '53400']);
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

/** Whether an error of the PostgreSQL client means the database is out of reach. */
function isUnreachable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || UNAVAILABLE_ERRNOS.has(code))) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection timeout/i.test(err.message);
}

/** `err` as a DatabaseUnavailable naming where, when it is one; otherwise unchanged. */
export function classifyDatabaseError(err: unknown, location: string): unknown {
  if (err instanceof DatabaseUnavailable || !isUnreachable(err)) return err;
  return new DatabaseUnavailable(`the database at ${location} cannot be reached: ${(err as Error).message}`, { cause: err });
}
