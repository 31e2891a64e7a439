import { createHash } from 'node:crypto';
import type { SqlDb } from '../sql/sqlDb.js';

/*
 * Each agent's configuration versions as the service keeps them (table fleet_configs, docs/fleet.md
 * "Configuration from the service"): 1, 2, ... per agent, never changed once written. A restore writes a new
 * version holding an old one's document.
 */

/** One stored version, without its document. */
export interface ConfigVersionInfo {
  version: number;
  /** The SHA-256 of the document's UTF-8 bytes, lower-case hex: what the agent checks. */
  sha256: string;
  /** ms */
  createdAt: number;
  createdBy: string;
  note: string;
}

/** One stored version with its document (the YAML as the operator wrote it). */
export interface ConfigVersion extends ConfigVersionInfo {
  document: string;
}

interface Row {
  version: number | string;
  document: string;
  created_at: number | string;
  created_by: string;
  note: string;
}

/** The SHA-256 of a document as the signed message carries it. */
const documentSha256 = (document: string) => createHash('sha256').update(document, 'utf8').digest('hex');

function fromRow(row: Row): ConfigVersion {
  return {
    version: Number(row.version),
    document: row.document,
    sha256: documentSha256(row.document),
    createdAt: Number(row.created_at),
    createdBy: row.created_by,
    note: row.note,
  };
}

const COLUMNS = 'version, document, created_at, created_by, note';

export class AgentConfigs {
  constructor(private readonly db: SqlDb) {}

  /** The newest version of the agent's configuration; undefined when none was ever stored. */
  async current(agentId: string): Promise<ConfigVersion | undefined> {
    const row = await this.db.get<Row>(`SELECT ${COLUMNS} FROM fleet_configs WHERE agent_id = ? ORDER BY version DESC LIMIT 1`, [agentId]);
    return row ? fromRow(row) : undefined;
  }

  /** One version; undefined when the agent has no such version. */
  async get(agentId: string, version: number): Promise<ConfigVersion | undefined> {
    const row = await this.db.get<Row>(`SELECT ${COLUMNS} FROM fleet_configs WHERE agent_id = ? AND version = ?`, [agentId, version]);
    return row ? fromRow(row) : undefined;
  }

  /** Every version of the agent's configuration, the newest first. */
  async versions(agentId: string): Promise<ConfigVersionInfo[]> {
    const rows = await this.db.all<Row>(`SELECT ${COLUMNS} FROM fleet_configs WHERE agent_id = ? ORDER BY version DESC`, [agentId]);
    return rows.map((row) => {
      const { document: _document, ...info } = fromRow(row);
      return info;
    });
  }

  /**
   * Stores `document` as the agent's next version (1 for its first) and returns it. The number is taken and the
   * row written in one transaction: two writers never get the same version (PostgreSQL runs it again instead).
   */
  add(agentId: string, document: string, by: string, note: string, now: number): Promise<ConfigVersion> {
    return this.db.transaction(async () => {
      const last = await this.db.value<number | string | null>('SELECT max(version) FROM fleet_configs WHERE agent_id = ?', [agentId]);
      const version = Number(last ?? 0) + 1;
      await this.db.run('INSERT INTO fleet_configs (agent_id, version, document, created_at, created_by, note) VALUES (?, ?, ?, ?, ?, ?)', [
        agentId,
        version,
        document,
        now,
        by,
        note,
      ]);
      return { version, document, sha256: documentSha256(document), createdAt: now, createdBy: by, note };
    });
  }

  /**
   * A new version with version `from`'s document, noted "restored from version N"; undefined when the agent has
   * no version `from`.
   */
  restore(agentId: string, from: number, by: string, now: number): Promise<ConfigVersion | undefined> {
    return this.db.transaction(async () => {
      const old = await this.get(agentId, from);
      return old ? this.add(agentId, old.document, by, `restored from version ${from}`, now) : undefined;
    });
  }
}
