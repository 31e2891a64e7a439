import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';

type Db = Database.Database;

/** SQL run in one transaction, or a step in code that manages its own transactions (idempotent). */
export type Migration = string | ((db: Db, file: string, tools: { openState: (file: string) => Db }) => void);

/**
 * The cache's schema migrations, applied in order by PRAGMA user_version, each in its own transaction.
 * Card numbers are TEXT (decimal integer strings can exceed 2^53); JSON columns hold arrays.
 */
export const MIGRATIONS: readonly Migration[] = [
  `
  CREATE TABLE users (
    email_id  INTEGER PRIMARY KEY,
    user_id   INTEGER,
    name      TEXT NOT NULL,
    email     TEXT,
    tag       TEXT NOT NULL CHECK (tag IN ('USER', 'GUEST')),
    ad_status TEXT NOT NULL,
    groups    TEXT NOT NULL,  -- JSON array of group names, flattened
    policies  TEXT NOT NULL   -- JSON array of policy names, flattened
  ) STRICT;

  CREATE TABLE guest_links (
    magic_link_id TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    token_digest  TEXT NOT NULL,  -- SHA-256 of magic_token: the token itself is a bearer secret
    resource_ids  TEXT NOT NULL,  -- JSON array of resource ids
    start_at      INTEGER,        -- epoch ms UTC; NULL = no lower bound
    end_at        INTEGER,        -- epoch ms UTC; NULL = never expires
    time_mapping  TEXT NOT NULL,  -- JSON, 7 weekdays from Sunday
    email_list    TEXT NOT NULL,  -- JSON array
    source        TEXT NOT NULL CHECK (source IN ('snapshot', 'mqtt'))
  ) STRICT;
  CREATE INDEX guest_links_by_token ON guest_links (token_digest);

  -- One row per (number, holder), carrying the holder facts a decision needs, so that deciding is one
  -- index lookup. The merge keeps these copies in step with users and guest_links.
  CREATE TABLE credentials (
    number       TEXT NOT NULL,
    holder_kind  TEXT NOT NULL CHECK (holder_kind IN ('user', 'link')),
    holder_id    TEXT NOT NULL,  -- email_id or magic_link_id
    label        TEXT,
    tag          TEXT,           -- user holders: users.tag, ad_status, groups, policies
    ad_status    TEXT,
    groups       TEXT,
    policies     TEXT,
    resource_ids TEXT,           -- link holders: guest_links.resource_ids, start_at, end_at, time_mapping
    start_at     INTEGER,
    end_at       INTEGER,
    time_mapping TEXT,
    PRIMARY KEY (number, holder_kind, holder_id)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX credentials_by_holder ON credentials (holder_kind, holder_id);

  CREATE TABLE door_state (
    door_uuid      TEXT PRIMARY KEY,
    state          TEXT NOT NULL CHECK (state IN ('LOCKED', 'UNLOCKED')),
    relock_at      INTEGER,  -- wall-clock epoch ms; NULL while locked or held open
    unlocked_since INTEGER,
    cause          TEXT NOT NULL,
    changed_at     INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    at           INTEGER NOT NULL,
    door_uuid    TEXT,
    type         TEXT NOT NULL,
    payload      TEXT NOT NULL,  -- JSON; never holds a whole card number
    published_at INTEGER
  ) STRICT;

  CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;
  `,
  `
  -- request_ids of executed signed commands: a replayed command is refused even after a restart.
  CREATE TABLE command_requests (
    request_id TEXT PRIMARY KEY,
    door_uuid  TEXT NOT NULL,
    seen_at    INTEGER NOT NULL  -- wall-clock ms
  ) STRICT;
  CREATE INDEX command_requests_by_age ON command_requests (seen_at);
  CREATE INDEX events_unpublished ON events (seq) WHERE published_at IS NULL;
  `,
  `
  -- The lock state moved to one file per door (store/doorState.ts): a lock must be savable on a full disk and
  -- while another process holds the database's write lock. An unlock saved here is not resumed (safe).
  DROP TABLE door_state;
  -- The newest issued_at applied per guest link received over MQTT (signed mode), kept after a revocation, so
  -- that an older message replayed later cannot bring a link back or roll it back.
  CREATE TABLE guest_link_versions (
    magic_link_id TEXT PRIMARY KEY,
    issued_at     INTEGER NOT NULL
  ) STRICT;
  `,
  moveStateOut,
  `
  -- The highest issued_at per guest link that came from the future and was counted as now + the skew
  -- (protocol/issuedAt.ts): a copy of such a message replayed while its stamp is still ahead is not new again.
  ALTER TABLE guest_link_versions ADD COLUMN future_issued_at INTEGER;
  `,
  `
  -- A PIN is a string of digits (issue 32): the digits as the service gave them, beside the number the cache is
  -- keyed by (leading zeros dropped). Rows from before have none: forgetting the revision held makes the next sync
  -- a full one, which fills them in (an agent provisioned by import alone: import again).
  ALTER TABLE credentials ADD COLUMN digits TEXT;
  DELETE FROM meta WHERE key IN ('directory_revision', 'directory_history');
  `,
  `
  -- A card's or PIN's own validity (the service's valid_from / valid_until, epoch ms UTC; NULL = unbounded; from
  -- inclusive, until exclusive). Rows from before have none: forgetting the revision held makes the next sync a
  -- full one, which fills them in (an agent provisioned by import alone: import again).
  ALTER TABLE credentials ADD COLUMN valid_from INTEGER;
  ALTER TABLE credentials ADD COLUMN valid_until INTEGER;
  DELETE FROM meta WHERE key IN ('directory_revision', 'directory_history');
  `,
];

const tableExists = (db: Db, name: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;

/**
 * Migration 4: the audit log and outbox, the replay cache and the daemon's status move to state.db beside the
 * cache, so that the daemon's frequent writes never wait for a sync or an import holding the cache's write lock.
 * Copied first (committed in state.db), then dropped here: a crash in between only repeats the copy.
 */
function moveStateOut(db: Db, file: string, tools: { openState: (file: string) => Db }): void {
  const state = tools.openState(join(dirname(file), 'state.db'));
  try {
    state.transaction(() => {
      if (tableExists(db, 'events')) {
        const insert = state.prepare('INSERT OR IGNORE INTO events (seq, at, door_uuid, type, payload, published_at) VALUES (?, ?, ?, ?, ?, ?)');
        for (const row of db.prepare('SELECT seq, at, door_uuid, type, payload, published_at FROM events').raw().iterate()) insert.run(...(row as unknown[]));
      }
      if (tableExists(db, 'command_requests')) {
        const insert = state.prepare('INSERT OR IGNORE INTO command_requests (request_id, door_uuid, seen_at) VALUES (?, ?, ?)');
        for (const row of db.prepare('SELECT request_id, door_uuid, seen_at FROM command_requests').raw().iterate()) insert.run(...(row as unknown[]));
      }
      const insert = state.prepare('INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)');
      for (const row of db.prepare("SELECT key, value FROM meta WHERE key IN ('runtime', 'events_evicted')").raw().iterate()) insert.run(...(row as unknown[]));
    })();
  } finally {
    state.close();
  }
  db.transaction(() => {
    db.exec("DROP TABLE IF EXISTS events; DROP TABLE IF EXISTS command_requests; DELETE FROM meta WHERE key IN ('runtime', 'events_evicted');");
  })();
}

/** The daemon's state database (state.db): written often, by the daemon only; read by status and events. */
export const STATE_MIGRATIONS: readonly Migration[] = [
  `
  CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    at           INTEGER NOT NULL,
    door_uuid    TEXT,
    type         TEXT NOT NULL,
    payload      TEXT NOT NULL,  -- JSON; never holds a whole card number
    published_at INTEGER
  ) STRICT;
  CREATE INDEX events_unpublished ON events (seq) WHERE published_at IS NULL;

  -- request_ids of executed signed commands: a replayed command is refused even after a restart.
  CREATE TABLE command_requests (
    request_id TEXT PRIMARY KEY,
    door_uuid  TEXT NOT NULL,
    seen_at    INTEGER NOT NULL  -- wall-clock ms
  ) STRICT;
  CREATE INDEX command_requests_by_age ON command_requests (seen_at);

  CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;
  `,
  // Eviction keeps the last alarms (store/alarmRetention.ts): found through this index, whatever else the log holds.
  `CREATE INDEX events_alarms ON events (seq) WHERE type IN ('duress', 'tamper', 'door_forced', 'door_held_open');`,
  // The emergency input's alarms (issue 30 item 1) join them: the index's condition stays the eviction's (ALARM_TYPES).
  `DROP INDEX events_alarms;
  CREATE INDEX events_alarms ON events (seq) WHERE type IN ('duress', 'tamper', 'door_forced', 'door_held_open', 'emergency_release', 'emergency_cleared', 'emergency_wiring', 'emergency_wiring_cleared');`,
  // Eviction keeps a passback violation as long as an alarm, and never keeps a flood's summary in an alarm's place
  // (issue 51 item 3): the condition stays the eviction's (store/eviction.ts ALARM_CONDITION).
  `DROP INDEX events_alarms;
  CREATE INDEX events_alarms ON events (seq) WHERE type IN ('duress', 'tamper', 'door_forced', 'door_held_open', 'emergency_release', 'emergency_cleared', 'emergency_wiring', 'emergency_wiring_cleared', 'passback_violation') AND json_extract(payload, '$.summary') IS NOT 1;`,
  // Eviction also keeps the last alarms of each door and type (store/eviction.ts KEPT_PER_SOURCE): a flood of one
  // input cannot push out another's alarm. Found through this index, whose condition is the eviction's too.
  `CREATE INDEX events_alarm_sources ON events (type, door_uuid, seq) WHERE type IN ('duress', 'tamper', 'door_forced', 'door_held_open', 'emergency_release', 'emergency_cleared', 'emergency_wiring', 'emergency_wiring_cleared', 'passback_violation') AND json_extract(payload, '$.summary') IS NOT 1;`,
  // The hash chain (docs/audit.md, "The chain"): each record's link, set in its insert's transaction. The rows from
  // before stay unchained; the chain (meta key audit_chain) starts at the next append, with a record saying so.
  `ALTER TABLE events ADD COLUMN chain_prev TEXT;
  ALTER TABLE events ADD COLUMN chain_hash TEXT;`,
];
