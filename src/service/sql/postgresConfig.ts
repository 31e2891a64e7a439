import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type pg from 'pg';
import { DoorAgentError, EXIT_INVALID_CONFIG, describeFsError } from '../../util/errors.js';
import { readSecret, type Env } from '../../util/secretFiles.js';

/** server.database as the loader gives it (config/schema.ts). */
export interface DatabaseOptions {
  /** postgres://user@host:port/database?sslmode=verify-full: no password in it (passwordFile holds it). */
  url: string;
  passwordFile?: string | undefined;
  /** The CA that signed the server's certificate (sslmode verify-ca, verify-full); the system's CAs when absent. */
  caFile?: string | undefined;
  maxConnections: number;
}

const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
type SslMode = (typeof SSL_MODES)[number];

const configError = (message: string) => new DoorAgentError(`server.database: ${message}`, { exitCode: EXIT_INVALID_CONFIG });

/** The URL without a password, for every message and log line. */
function databaseLocation(url: URL): string {
  const shown = new URL(url.href);
  shown.password = '';
  return shown.href;
}

/**
 * pg's connection settings from server.database: the URL (user, host, port, database, sslmode), the password from
 * its file (or DOOR_AGENT_DATABASE_PASSWORD), the CA from caFile. sslmode is verify-full unless the URL says
 * otherwise, but a loopback host takes disable as its default. A password written in the URL is refused (a
 * secret in a config file others may read); so is an sslmode PostgreSQL's libpq does not know.
 */
export function postgresConnection(options: DatabaseOptions, env: Env): { connection: pg.PoolConfig; location: string } {
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw configError(`url ${JSON.stringify(options.url)} is not a URL: write postgres://USER@HOST:PORT/DATABASE`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw configError(`url must start with postgres:// (it starts with ${url.protocol}//)`);
  }
  if (url.password !== '') throw configError('the url holds a password: put it in server.database.passwordFile instead (mode 0600)');
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '' || url.username === '' || url.hostname === '') {
    throw configError(`url ${databaseLocation(url)} must name a user, a host and a database: postgres://USER@HOST:PORT/DATABASE`);
  }
  for (const key of url.searchParams.keys()) {
    if (key !== 'sslmode') throw configError(`url parameter ${key} is not supported (only sslmode; the CA goes in server.database.caFile)`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || host === '::1' || host.startsWith('127.');
  const given = url.searchParams.get('sslmode');
  if (given !== null && !(SSL_MODES as readonly string[]).includes(given)) {
    throw configError(`sslmode=${given} is not one of ${SSL_MODES.join(', ')}`);
  }
  const sslmode = (given ?? (loopback ? 'disable' : 'verify-full')) as SslMode;
  const password = readSecret('server.database.passwordFile', options.passwordFile, env, 'DOOR_AGENT_DATABASE_PASSWORD');
  let ca: string | undefined;
  if (options.caFile !== undefined) {
    try {
      ca = readFileSync(options.caFile, 'utf8');
    } catch (err) {
      throw configError(`caFile: cannot read ${options.caFile}: ${describeFsError(err)}`);
    }
  }
  const connection: pg.PoolConfig = {
    host,
    port: url.port === '' ? 5432 : Number(url.port),
    database,
    user: decodeURIComponent(url.username),
    ...(password === undefined ? {} : { password }),
  };
  if (sslmode !== 'disable') {
    connection.ssl = {
      // require: encrypted but not checked (as libpq's require); verify-ca: the chain; verify-full: chain and host name.
      rejectUnauthorized: sslmode !== 'require',
      ...(ca === undefined ? {} : { ca }),
      ...(sslmode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
      // SNI carries a host name, never an address (RFC 6066).
      ...(isIP(host) === 0 ? { servername: host } : {}),
    };
  }
  return { connection, location: databaseLocation(url) };
}
