/** Schema of the reference service's database (server.dataDir/service.db), by PRAGMA user_version. */
export const SERVICE_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE api_keys (
    key_id     INTEGER PRIMARY KEY,
    key_hash   TEXT NOT NULL UNIQUE,  -- SHA-256 of the key: the key itself is shown once and never stored
    rank       TEXT NOT NULL CHECK (rank IN ('REGULAR', 'ADMIN', 'SUPER')),
    created_at INTEGER NOT NULL,
    expires_at INTEGER                -- NULL = never
  ) STRICT;

  CREATE TABLE users (
    email_id     INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL UNIQUE,
    email        TEXT NOT NULL UNIQUE COLLATE NOCASE,
    first_name   TEXT NOT NULL DEFAULT '',
    last_name    TEXT NOT NULL DEFAULT '',
    username     TEXT NOT NULL,
    rank         TEXT NOT NULL DEFAULT 'REGULAR' CHECK (rank IN ('REGULAR', 'ADMIN', 'SUPER')),
    tag          TEXT NOT NULL DEFAULT 'USER' CHECK (tag IN ('USER', 'GUEST')),
    suspended    INTEGER NOT NULL DEFAULT 0,
    email_status TEXT NOT NULL DEFAULT 'CONFIRMED',
    unique_id    TEXT NOT NULL,
    created      TEXT NOT NULL,   -- 'YYYY-MM-DD hh:mm:ss' UTC, as the API reports dates
    removed_at   TEXT            -- DELETE /user keeps the record
  ) STRICT;

  CREATE TABLE smartcards (
    email_id INTEGER NOT NULL REFERENCES users (email_id),
    position INTEGER NOT NULL,
    number   TEXT NOT NULL,
    label    TEXT,
    PRIMARY KEY (email_id, position)
  ) STRICT;
  CREATE INDEX smartcards_by_number ON smartcards (number);

  CREATE TABLE computer_usernames (
    email_id INTEGER NOT NULL REFERENCES users (email_id),
    position INTEGER NOT NULL,
    computer_username TEXT NOT NULL,
    PRIMARY KEY (email_id, position)
  ) STRICT;

  CREATE TABLE groups (
    group_id      INTEGER PRIMARY KEY,
    type          TEXT NOT NULL CHECK (type IN ('users', 'resources')),
    name          TEXT NOT NULL,
    resource_type TEXT CHECK (resource_type IN ('COMPUTER', 'DOOR'))
  ) STRICT;

  CREATE TABLE group_members (
    group_id  INTEGER NOT NULL REFERENCES groups (group_id) ON DELETE CASCADE,
    member_id INTEGER NOT NULL,   -- email_id for user groups, resource_id for resource groups
    PRIMARY KEY (group_id, member_id)
  ) STRICT;

  CREATE TABLE policies (
    policy_id INTEGER PRIMARY KEY,
    name      TEXT NOT NULL
  ) STRICT;

  CREATE TABLE policy_members (
    policy_id INTEGER NOT NULL REFERENCES policies (policy_id) ON DELETE CASCADE,
    email_id  INTEGER NOT NULL,
    PRIMARY KEY (policy_id, email_id)
  ) STRICT;

  CREATE TABLE mail_outbox (
    mail_id    INTEGER PRIMARY KEY,
    recipient  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    sent_at    INTEGER
  ) STRICT;
  `,
  `
  CREATE TABLE guest_links (
    magic_link_id INTEGER PRIMARY KEY,
    policy_id     INTEGER REFERENCES policies (policy_id) ON DELETE SET NULL,
    link          TEXT NOT NULL,   -- JSON: the POST /magiclinkadmin parameters plus magic_token, email_ids, config_id
    created_at    INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- The directory revision (extension endpoint GET /directory): each user's list item and detail as the doors see
  -- them, fingerprinted; a user whose fingerprint changes, or who is removed, gets the next revision.
  CREATE TABLE directory_entries (
    email_id INTEGER PRIMARY KEY,
    hash     TEXT NOT NULL,
    rev      INTEGER NOT NULL,
    removed  INTEGER NOT NULL DEFAULT 0
  ) STRICT;
  CREATE INDEX directory_entries_by_rev ON directory_entries (rev);
  CREATE TABLE directory_revision (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL,
    at       TEXT NOT NULL
  ) STRICT;
  `,
  `
  -- Guest links revoked at the doors. Their tombstones are published again on every connect to the broker (a
  -- revocation made while the broker was away must still reach it), and their ids are never given to a new link.
  CREATE TABLE revoked_guest_links (
    magic_link_id INTEGER PRIMARY KEY,
    revoked_at    INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- Lockdowns set with POST /lockdown (issue 14), one row per scope, ended ones kept: every connect to the broker
  -- publishes each again (retained), so a broker that lost its retained messages learns the current state.
  CREATE TABLE lockdowns (
    scope      TEXT PRIMARY KEY,   -- 'door:<uuid>' or 'agent:<id>' (protocol/lockdown.ts scopeName)
    active     INTEGER NOT NULL CHECK (active IN (0, 1)),
    "by"       TEXT NOT NULL,      -- who set it, as the message names them
    reason     TEXT,
    changed_at INTEGER NOT NULL,   -- ms: when it started or ended
    issued_at  INTEGER NOT NULL    -- unix seconds of the last message published: the next one is strictly later
  ) STRICT;
  -- The last issued_at of other retained messages the service signs (subject: 'holidays'): kept across restarts,
  -- so a restarted service never signs a message older than one the doors have already seen.
  CREATE TABLE retained_issued_at (
    subject   TEXT PRIMARY KEY,
    issued_at INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- The directory's history (issue 32): a random id created with the database and renewed whenever its history may
  -- have gone back (a restore from a backup), so a door holding a revision of the discarded history syncs in full;
  -- and a random tag per revision, so a revision number issued again after a restore does not match the old one.
  CREATE TABLE directory_history (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    history    TEXT NOT NULL,
    renewed_at TEXT NOT NULL,
    reason     TEXT NOT NULL
  ) STRICT;
  INSERT INTO directory_history VALUES (1, lower(hex(randomblob(16))), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'created');
  CREATE TABLE directory_tags (
    revision INTEGER PRIMARY KEY,
    tag      TEXT NOT NULL
  ) STRICT;
  INSERT INTO directory_tags SELECT revision, lower(hex(randomblob(8))) FROM directory_revision;
  `,
  `
  -- Keys for door controllers (issue 32 item 16): rank DOOR reads PINs in clear and changes nothing. SQLite cannot
  -- change a CHECK in place: the table is copied.
  CREATE TABLE api_keys_new (
    key_id     INTEGER PRIMARY KEY,
    key_hash   TEXT NOT NULL UNIQUE,
    rank       TEXT NOT NULL CHECK (rank IN ('REGULAR', 'ADMIN', 'SUPER', 'DOOR')),
    created_at INTEGER NOT NULL,
    expires_at INTEGER
  ) STRICT;
  INSERT INTO api_keys_new SELECT key_id, key_hash, rank, created_at, expires_at FROM api_keys;
  DROP TABLE api_keys;
  ALTER TABLE api_keys_new RENAME TO api_keys;
  `,
  `
  -- Access levels (extension: POST, PUT, GET, DELETE /policies): a policy created by POST /policies carries a
  -- definition, where (door resources and/or a resource group) and when (a weekly schedule, NULL = always; an
  -- optional start and end). Its name and members stay in policies and policy_members, as every policy's do; a
  -- guest link's policy has no row here and is no level.
  CREATE TABLE policy_levels (
    policy_id         INTEGER PRIMARY KEY REFERENCES policies (policy_id) ON DELETE CASCADE,
    resource_ids      TEXT NOT NULL,   -- JSON array of DOOR resource_ids, as given (sorted, no repeats)
    resource_group_id INTEGER REFERENCES groups (group_id) ON DELETE SET NULL,
    schedule          TEXT,            -- JSON: {"mon": ["22:00-06:00"], ..., "holidays": "closed"}; NULL = always
    start_time        TEXT,            -- 'YYYY-MM-DD hh:mm:ss' UTC; NULL = no start
    end_time          TEXT             -- 'YYYY-MM-DD hh:mm:ss' UTC; NULL = no end
  ) STRICT;
  -- The fingerprint of GET /directory's levels and resource_groups as last issued: a change to either (a level,
  -- a resource group's members or name) advances the directory revision, as a user's change does.
  CREATE TABLE directory_levels (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    hash TEXT NOT NULL
  ) STRICT;
  `,
  `
  -- A card's or PIN's validity (an extension): 'YYYY-MM-DD hh:mm:ss' UTC as given, NULL = unbounded; valid_from
  -- inclusive, valid_until exclusive. Existing cards have none.
  ALTER TABLE smartcards ADD COLUMN valid_from TEXT;
  ALTER TABLE smartcards ADD COLUMN valid_until TEXT;
  `,
];
