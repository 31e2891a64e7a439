import type { ServiceDb as Db } from './database.js';
import type { LevelSchedule } from './levelSchedule.js';
import type { ServiceResource } from './options.js';
import { preparedStatements } from './preparedStatements.js';

/** What defines a level besides its name and members (policy_levels). */
export interface LevelDefinition {
  /** DOOR resource_ids as listed (sorted, no repeats). */
  resource_ids: number[];
  resource_group_id: number | null;
  /** null: always. */
  schedule: LevelSchedule | null;
  start_time: string | null;
  end_time: string | null;
}

export interface Level extends LevelDefinition {
  policy_id: number;
  name: string;
}

/** A level as GET /directory gives it: where resolved to door ids, the group by name. */
export interface DirectoryLevel {
  name: string;
  resource_ids: number[];
  resource_group: string | null;
  schedule: LevelSchedule | null;
  start_time: string | null;
  end_time: string | null;
}

export interface DirectoryResourceGroup {
  name: string;
  resource_ids: number[];
}

interface LevelRow {
  policy_id: number;
  name: string;
  resource_ids: string;
  resource_group_id: number | null;
  schedule: string | null;
  start_time: string | null;
  end_time: string | null;
}

const SELECT_LEVELS = `SELECT l.policy_id, p.name, l.resource_ids, l.resource_group_id, l.schedule, l.start_time, l.end_time
  FROM policy_levels l JOIN policies p USING (policy_id)`;

/** The most levels a service holds: what every agent takes in one directory answer (api/shapes.ts directoryLevelsSchema). */
export const MAX_LEVELS = 10_000;

const sortedIds = (ids: Iterable<number>) => [...new Set(ids)].sort((a, b) => a - b);

/**
 * Access levels (extension, docs/reference-service.md "Access levels"): policies created by POST /policies, with
 * where (doors, a resource group) and when (a weekly schedule, a start and an end). Name and members live in
 * policies and policy_members like every policy's, so GET /user and the directory's details name them as usual.
 */
export class LevelStore {
  private readonly sql: ReturnType<typeof preparedStatements>;
  /** The configured COMPUTER resources: never a door of a level, even when a resource group holds them. */
  private readonly computers: ReadonlySet<number>;

  constructor(
    private readonly db: Db,
    resources: readonly ServiceResource[] = [],
  ) {
    this.computers = new Set(resources.filter((r) => r.type === 'COMPUTER').map((r) => r.resourceId));
    this.sql = preparedStatements(db);
  }

  private static fromRow(row: LevelRow): Level {
    return {
      policy_id: row.policy_id,
      name: row.name,
      resource_ids: JSON.parse(row.resource_ids) as number[],
      resource_group_id: row.resource_group_id,
      schedule: row.schedule === null ? null : (JSON.parse(row.schedule) as LevelSchedule),
      start_time: row.start_time,
      end_time: row.end_time,
    };
  }

  count(): number {
    return this.sql('SELECT count(*) FROM policy_levels', { pluck: true }).get() as number;
  }

  list(): Level[] {
    return (this.sql(`${SELECT_LEVELS} ORDER BY l.policy_id`).all() as LevelRow[]).map(LevelStore.fromRow);
  }

  get(policyId: number): Level | undefined {
    const row = this.sql(`${SELECT_LEVELS} WHERE l.policy_id = ?`).get(policyId) as LevelRow | undefined;
    return row && LevelStore.fromRow(row);
  }

  /** The level named `name` (compared without case), other than `except`. */
  named(name: string, except?: number): Level | undefined {
    const row = this.sql(`${SELECT_LEVELS} WHERE p.name = ? COLLATE NOCASE AND l.policy_id IS NOT ?`).get(name, except ?? null) as LevelRow | undefined;
    return row && LevelStore.fromRow(row);
  }

  /** Whether a policy that is not a level (a guest link's) has this name: a level of that name would be theirs too. */
  nameUsedByOtherPolicy(name: string): boolean {
    return this.sql('SELECT 1 FROM policies WHERE name = ? COLLATE NOCASE AND policy_id NOT IN (SELECT policy_id FROM policy_levels)').get(name) !== undefined;
  }

  members(policyId: number): number[] {
    return this.sql('SELECT email_id FROM policy_members WHERE policy_id = ? ORDER BY email_id', { pluck: true }).all(policyId) as number[];
  }

  memberCounts(): Map<number, number> {
    const rows = this.sql(
      'SELECT policy_id, count(*) AS n FROM policy_members WHERE policy_id IN (SELECT policy_id FROM policy_levels) GROUP BY policy_id',
    ).all() as Array<{
      policy_id: number;
      n: number;
    }>;
    return new Map(rows.map((r) => [r.policy_id, r.n]));
  }

  /** A resource group by id (type resources), with its resource_type. */
  resourceGroup(groupId: number): { group_id: number; name: string; resource_type: 'COMPUTER' | 'DOOR' | null } | undefined {
    return this.sql("SELECT group_id, name, resource_type FROM groups WHERE group_id = ? AND type = 'resources'").get(groupId) as
      | { group_id: number; name: string; resource_type: 'COMPUTER' | 'DOOR' | null }
      | undefined;
  }

  private writeDefinition(policyId: number, def: LevelDefinition): void {
    this.sql(
      `INSERT INTO policy_levels (policy_id, resource_ids, resource_group_id, schedule, start_time, end_time) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (policy_id) DO UPDATE SET resource_ids = excluded.resource_ids, resource_group_id = excluded.resource_group_id,
         schedule = excluded.schedule, start_time = excluded.start_time, end_time = excluded.end_time`,
    ).run(
      policyId,
      JSON.stringify(sortedIds(def.resource_ids)),
      def.resource_group_id,
      def.schedule === null ? null : JSON.stringify(def.schedule),
      def.start_time,
      def.end_time,
    );
  }

  /** A new level with its members, in one transaction; returns its policy_id. */
  create(name: string, def: LevelDefinition, members: readonly number[]): number {
    return this.db.transaction(() => {
      const policyId = Number(this.sql('INSERT INTO policies (name) VALUES (?)').run(name).lastInsertRowid);
      this.writeDefinition(policyId, def);
      const add = this.sql('INSERT OR IGNORE INTO policy_members (policy_id, email_id) VALUES (?, ?)');
      for (const id of members) add.run(policyId, id);
      return policyId;
    })();
  }

  /** Replaces the name and definition and changes the members, in one transaction. */
  update(policyId: number, name: string, def: LevelDefinition, add: readonly number[], del: readonly number[]): void {
    this.db.transaction(() => {
      this.sql('UPDATE policies SET name = ? WHERE policy_id = ?').run(name, policyId);
      this.writeDefinition(policyId, def);
      const insert = this.sql('INSERT OR IGNORE INTO policy_members (policy_id, email_id) VALUES (?, ?)');
      const remove = this.sql('DELETE FROM policy_members WHERE policy_id = ? AND email_id = ?');
      for (const id of add) insert.run(policyId, id);
      for (const id of del) remove.run(policyId, id);
    })();
  }

  /** The level, its policy and its memberships, in one transaction. */
  delete(policyId: number): void {
    this.db.transaction(() => {
      this.sql('DELETE FROM policy_members WHERE policy_id = ?').run(policyId);
      this.sql('DELETE FROM policy_levels WHERE policy_id = ?').run(policyId);
      this.sql('DELETE FROM policies WHERE policy_id = ?').run(policyId);
    })();
  }

  /**
   * GET /directory's `levels` (sorted by name; each level's doors resolved: its listed ids and its group's current
   * members, computers left out) and `resource_groups` (every resource group, sorted by name, its members as held).
   */
  forDirectory(): { levels: DirectoryLevel[]; resource_groups: DirectoryResourceGroup[] } {
    const groups = new Map<number, { name: string; members: number[] }>();
    for (const g of this.sql("SELECT group_id, name FROM groups WHERE type = 'resources' ORDER BY group_id").all() as Array<{
      group_id: number;
      name: string;
    }>) {
      groups.set(g.group_id, { name: g.name, members: [] });
    }
    const members = this.sql(
      "SELECT m.group_id, m.member_id FROM group_members m JOIN groups g USING (group_id) WHERE g.type = 'resources' ORDER BY m.member_id",
    ).all() as Array<{ group_id: number; member_id: number }>;
    for (const m of members) groups.get(m.group_id)?.members.push(m.member_id);
    const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    const levels = this.list()
      .map((level): DirectoryLevel => {
        const group = level.resource_group_id === null ? undefined : groups.get(level.resource_group_id);
        const fromGroup = (group?.members ?? []).filter((id) => !this.computers.has(id));
        return {
          name: level.name,
          resource_ids: sortedIds([...level.resource_ids, ...fromGroup]),
          resource_group: group?.name ?? null,
          schedule: level.schedule,
          start_time: level.start_time,
          end_time: level.end_time,
        };
      })
      .sort(byName);
    const resourceGroups = [...groups.values()].map((g) => ({ name: g.name, resource_ids: g.members })).sort(byName);
    return { levels, resource_groups: resourceGroups };
  }
}
