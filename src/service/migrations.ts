/** A version 4 UUID made by SQLite (a group's unique_id, whatever inserts it). */
const SQLITE_UUID = `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
    substr('89ab', 1 + abs(random()) % 4, 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;

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
  `
  -- The users whose door view (directory.ts fingerprintOf: status, tag, name, e-mail, user_id, user groups,
  -- policies, cards with their dates) may have changed since the directory revision was last brought up to date
  -- (issue 52 item 3): kept by triggers on every table that view is read from, so no route or tool can forget one.
  -- Directory.refresh fingerprints only these and deletes them in its transaction. computer_usernames is not
  -- fingerprinted (a door decides nothing on it), policy_levels and resource groups are compared as a whole.
  CREATE TABLE directory_pending (email_id INTEGER PRIMARY KEY) STRICT;
  CREATE TRIGGER directory_pending_users_insert AFTER INSERT ON users BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (NEW.email_id);
  END;
  CREATE TRIGGER directory_pending_users_update AFTER UPDATE ON users BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.email_id), (NEW.email_id);
  END;
  CREATE TRIGGER directory_pending_users_delete AFTER DELETE ON users BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.email_id);
  END;
  CREATE TRIGGER directory_pending_smartcards_insert AFTER INSERT ON smartcards BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (NEW.email_id);
  END;
  CREATE TRIGGER directory_pending_smartcards_update AFTER UPDATE ON smartcards BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.email_id), (NEW.email_id);
  END;
  CREATE TRIGGER directory_pending_smartcards_delete AFTER DELETE ON smartcards BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.email_id);
  END;
  -- A resource group's member_id is a resource id, not an email_id: at worst a user of that id is fingerprinted
  -- for nothing (their fingerprint is unchanged, so no revision is spent on it).
  CREATE TRIGGER directory_pending_group_members_insert AFTER INSERT ON group_members BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (NEW.member_id);
  END;
  CREATE TRIGGER directory_pending_group_members_update AFTER UPDATE ON group_members BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.member_id), (NEW.member_id);
  END;
  CREATE TRIGGER directory_pending_group_members_delete AFTER DELETE ON group_members BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.member_id);
  END;
  -- A group renamed (or retyped), or deleted: every member. BEFORE DELETE, while its members are still listed,
  -- whether or not the foreign-key cascade runs (a tool may have foreign_keys off).
  CREATE TRIGGER directory_pending_groups_update AFTER UPDATE ON groups
    WHEN OLD.name IS NOT NEW.name OR OLD.type IS NOT NEW.type OR OLD.group_id IS NOT NEW.group_id BEGIN
    INSERT OR IGNORE INTO directory_pending SELECT member_id FROM group_members WHERE group_id IN (OLD.group_id, NEW.group_id);
  END;
  CREATE TRIGGER directory_pending_groups_delete BEFORE DELETE ON groups BEGIN
    INSERT OR IGNORE INTO directory_pending SELECT member_id FROM group_members WHERE group_id = OLD.group_id;
  END;
  -- A policy renamed, or deleted: every member. Only the name is in a user's view: PUT /policies writes the name
  -- back unchanged when it changes a level's doors or hours, which costs no user.
  CREATE TRIGGER directory_pending_policies_update AFTER UPDATE ON policies
    WHEN OLD.name IS NOT NEW.name OR OLD.policy_id IS NOT NEW.policy_id BEGIN
    INSERT OR IGNORE INTO directory_pending SELECT email_id FROM policy_members WHERE policy_id IN (OLD.policy_id, NEW.policy_id);
  END;
  CREATE TRIGGER directory_pending_policies_delete BEFORE DELETE ON policies BEGIN
    INSERT OR IGNORE INTO directory_pending SELECT email_id FROM policy_members WHERE policy_id = OLD.policy_id;
  END;
  CREATE TRIGGER directory_pending_policy_members_insert AFTER INSERT ON policy_members BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (NEW.email_id);
  END;
  CREATE TRIGGER directory_pending_policy_members_update AFTER UPDATE ON policy_members BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.email_id), (NEW.email_id);
  END;
  CREATE TRIGGER directory_pending_policy_members_delete AFTER DELETE ON policy_members BEGIN
    INSERT OR IGNORE INTO directory_pending VALUES (OLD.email_id);
  END;
  -- A user's groups and policies are read by member: without these, each refresh scanned both tables whole.
  CREATE INDEX group_members_by_member ON group_members (member_id);
  CREATE INDEX policy_members_by_email ON policy_members (email_id);
  -- Every user once, and every live entry: the first refresh after the upgrade reconciles them all, as the pass
  -- over every user did.
  INSERT OR IGNORE INTO directory_pending SELECT email_id FROM users;
  INSERT OR IGNORE INTO directory_pending SELECT email_id FROM directory_entries WHERE removed = 0;
  `,
  `
  -- Several service processes on one database (issue 52 item 2). What the broker is owed: a row per change to
  -- publish (the directory revision, a guest link and the index, a lockdown's scope, the holidays), written in
  -- the change's transaction, published from the database's current state by the one process that holds the
  -- publisher lock, and deleted once the broker has it; a publisher that dies leaves its rows to the next one.
  -- A mail being sent by one service process (mailer.ts): the others leave it alone for a minute.
  ALTER TABLE mail_outbox ADD COLUMN claimed_at INTEGER;
  CREATE TABLE publish_queue (
    id      INTEGER PRIMARY KEY,
    kind    TEXT NOT NULL CHECK (kind IN ('revision', 'link', 'lockdown', 'holidays', 'all')),
    subject TEXT NOT NULL DEFAULT ''   -- the link id, the lockdown scope; '' for the others
  ) STRICT;
  -- Console sessions and mailed sign-in links, in the database so that any process answers any request: only
  -- the SHA-256 of a cookie or link token is kept.
  CREATE TABLE console_sessions (
    id_hash      TEXT PRIMARY KEY,
    rank         TEXT NOT NULL,
    who          TEXT NOT NULL,
    csrf         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    holder_kind  TEXT CHECK (holder_kind IN ('user', 'key')),
    holder_id    TEXT,            -- the email_id of a user, the SHA-256 of a key
    flash        TEXT             -- the message for the session's next page (JSON), which another process may serve
  ) STRICT;
  CREATE TABLE console_sign_in_links (
    token_hash TEXT PRIMARY KEY,
    email_id   INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- A fleet run from the service (issue 54, docs/fleet.md). Enrolment codes (only the SHA-256 of a code's
  -- secret is kept), the agents that used one (pending until an operator adopts or refuses them), each agent's
  -- configuration versions, the signed release bundles (in chunks, so that any process serves them), the
  -- rollouts and where each agent stands in one, reader firmware files and the tasks that send them.
  CREATE TABLE fleet_enrol_codes (
    secret_sha256 TEXT PRIMARY KEY,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    created_by    TEXT NOT NULL,
    used_at       INTEGER
  ) STRICT;
  CREATE TABLE fleet_agents (
    enrolment_id TEXT PRIMARY KEY,     -- a uuid given when the code is used
    agent_id     TEXT UNIQUE,          -- its agent.id, given at adoption
    state        TEXT NOT NULL CHECK (state IN ('pending', 'adopted', 'refused')),
    poll_sha256  TEXT,                 -- the SHA-256 of its poll secret; NULL once it has used its own key
    facts        TEXT NOT NULL,        -- JSON: what it reported of its board (api/fleet.ts, boardFactsSchema)
    enrolled_at  INTEGER NOT NULL,
    decided_at   INTEGER,
    decided_by   TEXT,
    reason       TEXT,                 -- why it was refused
    key_id       INTEGER,              -- its DOOR key (api_keys)
    report       TEXT,                 -- JSON: its last report (fleetReportSchema)
    reported_at  INTEGER
  ) STRICT;
  CREATE TABLE fleet_configs (
    agent_id   TEXT NOT NULL,
    version    INTEGER NOT NULL,       -- 1, 2, ... per agent; a restore is a new version of an old document
    document   TEXT NOT NULL,          -- the YAML as the operator wrote it
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    note       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (agent_id, version)
  ) STRICT;
  CREATE TABLE fleet_releases (
    version     TEXT NOT NULL,
    arch        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    size        INTEGER NOT NULL,
    signature   TEXT NOT NULL,         -- the release key's (purpose 'release', over version, arch, sha256, size)
    uploaded_at INTEGER NOT NULL,
    uploaded_by TEXT NOT NULL,
    PRIMARY KEY (version, arch)
  ) STRICT;
  CREATE TABLE fleet_release_chunks (
    version TEXT NOT NULL,
    arch    TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    bytes   BLOB NOT NULL,
    PRIMARY KEY (version, arch, seq)
  ) STRICT;
  CREATE TABLE fleet_rollouts (
    rollout_id           INTEGER PRIMARY KEY,
    version              TEXT NOT NULL,
    stage                TEXT NOT NULL CHECK (stage IN ('canary', 'share', 'all', 'done', 'stopped')),
    canary               TEXT NOT NULL,
    share_percent        INTEGER NOT NULL,
    allow_downgrade      INTEGER NOT NULL DEFAULT 0,
    health_bound_seconds INTEGER NOT NULL,
    created_at           INTEGER NOT NULL,
    created_by           TEXT NOT NULL,
    stopped_reason       TEXT
  ) STRICT;
  CREATE TABLE fleet_rollout_agents (
    rollout_id INTEGER NOT NULL,
    agent_id   TEXT NOT NULL,
    stage      TEXT NOT NULL CHECK (stage IN ('canary', 'share', 'all')),
    state      TEXT NOT NULL CHECK (state IN ('waiting', 'offered', 'downloading', 'installing', 'healthy', 'rolled_back', 'refused', 'failed')),
    detail     TEXT NOT NULL DEFAULT '',
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (rollout_id, agent_id)
  ) STRICT;
  CREATE TABLE fleet_files (
    file_id     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    size        INTEGER NOT NULL,
    content     BLOB NOT NULL,
    uploaded_at INTEGER NOT NULL,
    uploaded_by TEXT NOT NULL
  ) STRICT;
  CREATE TABLE fleet_tasks (
    task_id    INTEGER PRIMARY KEY,
    agent_id   TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('reader_firmware')),
    readers    TEXT NOT NULL,          -- JSON: the readers' names
    file_id    INTEGER NOT NULL REFERENCES fleet_files (file_id),
    state      TEXT NOT NULL CHECK (state IN ('waiting', 'running', 'done', 'failed')),
    detail     TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX fleet_tasks_by_agent ON fleet_tasks (agent_id, state);
  `,
  `
  -- Evidence (issue 55, docs/audit.md): every agent's audit events kept, each agent's hash chains, the exports'
  -- cursors, webhook subscriptions and their deliveries.
  CREATE TABLE audit_events (
    event_id    INTEGER PRIMARY KEY,   -- the service's order of arrival: exports and paging follow it
    agent_id    TEXT NOT NULL,
    chain_id    TEXT NOT NULL,         -- '' for an event from before the chain (it carries no hash)
    seq         INTEGER NOT NULL,
    at          INTEGER NOT NULL,      -- the event's time (ms)
    door_uuid   TEXT,
    type        TEXT NOT NULL,
    person_id   INTEGER,               -- its first holder's email_id (a user), else NULL
    person      TEXT,                  -- who: the person's name, as the event names them
    reason      TEXT,                  -- a refusal's reason
    area        TEXT,                  -- the area of its first passage
    body        TEXT NOT NULL,         -- the wire event as received (JSON)
    prev_hash   TEXT,
    hash        TEXT,
    received_at INTEGER NOT NULL,
    UNIQUE (agent_id, chain_id, seq)
  ) STRICT;
  CREATE INDEX audit_events_at ON audit_events (at);
  CREATE INDEX audit_events_door ON audit_events (door_uuid, at);
  CREATE INDEX audit_events_person ON audit_events (person_id, at);
  CREATE INDEX audit_events_type ON audit_events (type, at);
  -- The reports (audit/reports*.ts): a door's grants or refusals over a range; an area's passages (bench -- reports).
  CREATE INDEX audit_events_door_type ON audit_events (door_uuid, type, at);
  CREATE INDEX audit_events_area ON audit_events (area, at) WHERE area IS NOT NULL;
  CREATE TABLE audit_chains (
    agent_id           TEXT NOT NULL,
    chain_id           TEXT NOT NULL,
    first_seen_at      INTEGER NOT NULL,
    first_seq          INTEGER NOT NULL,  -- the lowest seq received: seqs before it never came (not deleted)
    started_at         INTEGER,         -- the time of its audit_chain_started record, once received
    contiguous_seq     INTEGER NOT NULL DEFAULT 0,  -- every seq up to this one received (or pruned)
    last_seq           INTEGER NOT NULL DEFAULT 0,
    last_at            INTEGER,
    gap_since          INTEGER,         -- when a seq past contiguous_seq + 1 came first; NULL: no gap
    gap_reported_at    INTEGER,
    pruned_through_seq INTEGER NOT NULL DEFAULT 0,  -- deleted by server.audit.retentionDays up to this seq
    PRIMARY KEY (agent_id, chain_id)
  ) STRICT;
  CREATE TABLE audit_exports (
    name          TEXT PRIMARY KEY,    -- 'syslog', 'webhooks'
    last_event_id INTEGER NOT NULL
  ) STRICT;
  CREATE TABLE webhooks (
    webhook_id  INTEGER PRIMARY KEY,
    url         TEXT NOT NULL,
    types       TEXT NOT NULL,         -- JSON array of event types, or ["*"]
    secret      TEXT NOT NULL,         -- the HMAC key: never shown after creation, never logged
    description TEXT NOT NULL DEFAULT '',
    enabled     INTEGER NOT NULL DEFAULT 1,
    created_at  INTEGER NOT NULL,
    created_by  TEXT NOT NULL
  ) STRICT;
  CREATE TABLE webhook_deliveries (
    delivery_id  INTEGER PRIMARY KEY,
    webhook_id   INTEGER NOT NULL,
    event_id     INTEGER NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      INTEGER NOT NULL,     -- when it is due (pending)
    created_at   INTEGER NOT NULL,
    delivered_at INTEGER,
    pending_since INTEGER NOT NULL,    -- made or replayed then: it fails once server.webhooks.retryHours past this
    UNIQUE (webhook_id, event_id)
  ) STRICT;
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, state, next_at);
  CREATE TABLE webhook_attempts (
    delivery_id INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    status      INTEGER,               -- the HTTP status; NULL: no answer
    error       TEXT,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
  ) STRICT;
  `,
  `
  -- People from an identity source (docs/identity-sources.md): which source owns each user and user group (local,
  -- scim, ldap) and the source's own key for it, SCIM's id of a group, the SCIM token's scope, and the LDAP sync's
  -- state (a lease, so that one process syncs at a time) and its runs.
  ALTER TABLE users ADD COLUMN source TEXT NOT NULL DEFAULT 'local' CHECK (source IN ('local', 'scim', 'ldap'));
  ALTER TABLE users ADD COLUMN external_id TEXT;      -- SCIM: the provider's externalId; LDAP: the entry's id attribute
  ALTER TABLE users ADD COLUMN source_dn TEXT;        -- LDAP: the entry's DN when last read (shown; matched by id)
  ALTER TABLE users ADD COLUMN source_seen_at INTEGER; -- when its source last wrote or confirmed it (ms)
  CREATE INDEX users_by_source ON users (source, external_id);
  CREATE INDEX users_username_lower ON users (lower(username));
  CREATE INDEX users_by_unique_id ON users (unique_id); -- SCIM's id of a user (/scim/v2/Users/{id})
  ALTER TABLE groups ADD COLUMN source TEXT NOT NULL DEFAULT 'local' CHECK (source IN ('local', 'scim', 'ldap'));
  ALTER TABLE groups ADD COLUMN external_id TEXT;
  ALTER TABLE groups ADD COLUMN source_dn TEXT;
  ALTER TABLE groups ADD COLUMN source_gone_at INTEGER; -- LDAP: gone from the directory then (emptied, kept)
  ALTER TABLE groups ADD COLUMN unique_id TEXT;        -- SCIM's id of the group: a UUID, never reused
  UPDATE groups SET unique_id = ${SQLITE_UUID};
  CREATE UNIQUE INDEX groups_by_unique_id ON groups (unique_id);
  CREATE INDEX groups_by_source ON groups (source, external_id);
  -- Whatever inserts a group (a route, the console, a tool) gets its id.
  CREATE TRIGGER groups_unique_id AFTER INSERT ON groups WHEN NEW.unique_id IS NULL BEGIN
    UPDATE groups SET unique_id = ${SQLITE_UUID} WHERE group_id = NEW.group_id;
  END;
  -- api: every route but /scim/v2; scim: /scim/v2 only (an identity provider's bearer token).
  ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'api' CHECK (scope IN ('api', 'scim'));
  CREATE TABLE identity_sync_state (
    source        TEXT PRIMARY KEY,    -- 'ldap'
    running_by    TEXT,                -- the process holding the lease (host:pid), NULL: none
    running_until INTEGER,             -- the lease ends then (ms): a process that died lets it go by itself
    last_ok_at    INTEGER,
    next_at       INTEGER              -- the next scheduled sync (ms)
  ) STRICT;
  CREATE TABLE identity_sync_runs (
    run_id        INTEGER PRIMARY KEY,
    source        TEXT NOT NULL,
    trigger       TEXT NOT NULL,       -- 'schedule', 'cli', or who asked ('console: ...', 'API key (ADMIN)')
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    outcome       TEXT NOT NULL CHECK (outcome IN ('running', 'ok', 'failed', 'held')),
    reason        TEXT,                -- failed: why; held: what it would do
    counts        TEXT NOT NULL DEFAULT '{}',  -- JSON: entries read, created, updated, suspended, ... (api/identity.ts)
    would_suspend INTEGER,             -- held: the suspensions and removals it would have made
    sample        TEXT                 -- held: JSON array of the first e-mail addresses it would suspend
  ) STRICT;
  CREATE INDEX identity_sync_runs_by_source ON identity_sync_runs (source, run_id);
  `,
  `
  -- A restore awaiting acceptance (docs/reference-service.md "Backup and restore"): set when the history is renewed
  -- because the database went back (the renewal's reason says how it was seen), cleared by POST
  -- /directory/restore/accept. While it is set, every GET /directory answer carries "restore" and the doors refuse
  -- what it would grant beyond their caches: the revocations made after the backup came undone with it.
  ALTER TABLE directory_history ADD COLUMN restore_pending_since TEXT; -- when it was detected (ISO); NULL: none awaits
  `,
];
