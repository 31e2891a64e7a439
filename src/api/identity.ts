import * as z from 'zod';

/**
 * Where people come from (docs/identity-sources.md): the sources a user or user group may belong to, and the
 * answers of GET /identity-sources and POST /identity-sources/ldap/sync.
 */

/** Who owns a user or a user group: the service itself (API, console), an identity provider over SCIM, or LDAP. */
export const IDENTITY_SOURCES = ['local', 'scim', 'ldap'] as const;
export type IdentitySource = (typeof IDENTITY_SOURCES)[number];
export const identitySourceSchema = z.enum(IDENTITY_SOURCES);

/** What one LDAP sync read and changed (each a count). */
export const syncCountsSchema = z.object({
  /** User entries read from LDAP. */
  entries: z.number().int(),
  /** Group entries read. */
  groups: z.number().int(),
  created: z.number().int(),
  /** Local users with an entry's e-mail, now owned by LDAP. */
  claimed: z.number().int(),
  /** Name, e-mail, username or card changed. */
  updated: z.number().int(),
  suspended: z.number().int(),
  reactivated: z.number().int(),
  removed: z.number().int(),
  /** Memberships added or removed. */
  memberships: z.number().int(),
  /** Groups made, renamed or emptied (gone from LDAP). */
  groupsChanged: z.number().int(),
  /** Entries skipped: no e-mail, a user owned by SCIM, an e-mail two entries share (named in the log). */
  skipped: z.number().int(),
});
export type SyncCounts = z.output<typeof syncCountsSchema>;

/** One LDAP sync. */
export const syncRunSchema = z.object({
  run_id: z.number().int(),
  /** 'schedule', 'cli', or who asked ('console: ...', 'API key (ADMIN)'). */
  trigger: z.string(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
  outcome: z.enum(['running', 'ok', 'failed', 'held']),
  /** failed: why, in words an operator can act on; held: what it would do; null for ok. */
  reason: z.string().nullable(),
  counts: syncCountsSchema,
  /** held: how many users it would suspend or remove (confirm_suspensions takes this number). */
  would_suspend: z.number().int().nullable(),
  /** held: the first e-mail addresses it would suspend or remove. */
  sample: z.array(z.string()).nullable(),
});
export type SyncRunAnswer = z.output<typeof syncRunSchema>;

const ownedCounts = z.object({ users: z.number().int(), groups: z.number().int() });

/** GET /identity-sources. */
export const identitySourcesSchema = z.object({
  local: ownedCounts,
  scim: ownedCounts.extend({ enabled: z.boolean() }),
  ldap: ownedCounts.extend({
    enabled: z.boolean(),
    /** The configured server (no credentials); null without server.identity.ldap. */
    url: z.string().nullable(),
    last: syncRunSchema.nullable(),
    last_ok_at: z.string().nullable(),
    next_at: z.string().nullable(),
    /** The last few syncs, newest first. */
    recent: z.array(syncRunSchema),
  }),
});
export type IdentitySourcesAnswer = z.output<typeof identitySourcesSchema>;
