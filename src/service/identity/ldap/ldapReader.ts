import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { Client } from 'ldapts';
import type { Logger } from 'pino';
import { describeFsError } from '../../../util/errors.js';
import type { LdapSourceOptions } from '../../options.js';
import { type LdapGroup, type LdapReader, LdapReadError, type LdapSnapshot } from './ldapEntries.js';
import { groupFromEntry, personFromEntry, type RawEntry } from './ldapEntryMap.js';
import { describeLdapFailure, type FailureContext, type LdapStep } from './ldapFailure.js';
import { binarySpellings, groupAttributes, type LdapMapping, ldapMapping, userAttributes } from './presets.js';

export interface LdapReaderDeps {
  logger: Logger;
  /** The bind password from its file, read at each read (default readBindPassword). */
  readPassword?: (file: string) => Promise<string>;
}

/** The file's content without its final newline; an error naming the file, never the content. */
async function readBindPassword(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new LdapReadError(`cannot read bindPasswordFile ${file}: ${describeFsError(err)}`, { cause: err });
  }
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new LdapReadError(`bindPasswordFile ${file} is empty: put the bind password in it`);
  return password;
}

/** The URL's scheme, host and port (the default port spelled out). */
function target(url: string): { secure: boolean; host: string; port: number } {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'ldaps:';
  return { secure, host: parsed.hostname.replace(/^\[|\]$/g, ''), port: parsed.port === '' ? (secure ? 636 : 389) : Number(parsed.port) };
}

/**
 * Reads the directory once through ldapts (docs/identity-sources.md, "LDAP and Active Directory"): one connection
 * (ldaps://, or ldap:// with StartTLS; the certificate checked against caFile only, and against serverName or the
 * URL's host), a bind as bindDn (none without it: anonymous), the users' paged search, the groups' when
 * configured, an unbind. Every failure is an LdapReadError whose message says what to check; nothing partial is
 * returned (a search the server cut short fails, so the sync never takes a truncated directory for leavers).
 */
export class LdapClientReader implements LdapReader {
  private readonly mapping: LdapMapping;

  constructor(
    private readonly options: LdapSourceOptions,
    private readonly deps: LdapReaderDeps,
  ) {
    this.mapping = ldapMapping(options);
  }

  async read(): Promise<LdapSnapshot> {
    const o = this.options;
    const started = performance.now();
    const password = o.bindPasswordFile === undefined ? undefined : await (this.deps.readPassword ?? readBindPassword)(o.bindPasswordFile);
    const where = target(o.url);
    const tls = where.secure || o.startTls ? await this.tlsOptions(where.host) : {};
    const timeout = o.timeoutSeconds * 1000;
    const client = new Client({ url: o.url, timeout, connectTimeout: timeout, ...(where.secure ? { tlsOptions: tls } : {}) });
    const context: FailureContext = {
      step: 'bind',
      url: o.url,
      hostPort: `${where.host}:${where.port}`,
      certificateName: o.serverName ?? where.host,
      caFile: o.caFile,
      bindDn: o.bindDn,
      baseDn: o.users.baseDn,
      timeoutSeconds: o.timeoutSeconds,
      pageSize: o.pageSize,
    };
    const step = async <T>(name: LdapStep, baseDn: string, work: () => Promise<T>): Promise<T> => {
      try {
        return await work();
      } catch (err) {
        if (err instanceof LdapReadError) throw err;
        throw new LdapReadError(describeLdapFailure(err, { ...context, step: name, baseDn }), { cause: err });
      }
    };
    try {
      // StartTLS upgrades the socket already open (tls.connect is given no host): the name to check is said here.
      if (o.startTls) await step('startTls', o.users.baseDn, () => client.startTLS({ ...tls, host: context.certificateName }));
      if (o.bindDn !== undefined) await step('bind', o.users.baseDn, () => client.bind(o.bindDn!, password));
      const people = await step('users', o.users.baseDn, () =>
        this.search(client, o.users.baseDn, this.mapping.userFilter, userAttributes(this.mapping), (e) => personFromEntry(e, this.mapping)),
      );
      const groups: LdapGroup[] =
        o.groups === undefined
          ? []
          : await step('groups', o.groups.baseDn, () =>
              this.search(client, o.groups!.baseDn, this.mapping.groupFilter, groupAttributes(this.mapping), (e) => groupFromEntry(e, this.mapping)),
            );
      this.deps.logger.debug(
        { people: people.length, groups: groups.length, ms: Math.round(performance.now() - started) },
        `LDAP: read ${people.length} users and ${groups.length} groups from ${o.url}`,
      );
      return { people, groups, membership: this.mapping.membership };
    } finally {
      // The unbind only says goodbye: a connection already gone has nothing to close.
      await client.unbind().catch(() => undefined);
    }
  }

  /** One paged search (pageSize entries a page, each page within timeoutSeconds), each entry mapped as it comes. */
  private async search<T>(client: Client, baseDn: string, filter: string, attributes: string[], map: (entry: RawEntry) => T): Promise<T[]> {
    const found: T[] = [];
    const pages = client.searchPaginated(baseDn, {
      scope: 'sub',
      filter,
      attributes,
      explicitBufferAttributes: binarySpellings(attributes),
      paged: { pageSize: this.options.pageSize },
      timeLimit: this.options.timeoutSeconds,
    });
    for await (const page of pages) {
      for (const entry of page.searchEntries) found.push(map(entry as RawEntry));
    }
    return found;
  }

  /** The TLS options of ldaps:// and StartTLS alike: the CA pinned, the name checked, TLS 1.2 at least. */
  private async tlsOptions(host: string): Promise<ConnectionOptions> {
    const o = this.options;
    let ca: string | undefined;
    if (o.caFile !== undefined) {
      try {
        ca = await readFile(o.caFile, 'utf8');
      } catch (err) {
        throw new LdapReadError(`cannot read caFile ${o.caFile}: ${describeFsError(err)}`, { cause: err });
      }
    }
    const name = o.serverName ?? host;
    return {
      // Only this CA: the machine's usual roots are not trusted for the directory.
      ...(ca === undefined ? {} : { ca: [ca] }),
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      // The name the certificate must carry; SNI takes a host name, never an address (RFC 6066): an address is
      // checked as the URL's host.
      ...(isIP(name) === 0 ? { servername: name } : {}),
    };
  }
}
