import type { LevelSchedule } from './levelSchedule.js';
import type { ServiceResource } from './options.js';
import type { SqlDb } from './sql/sqlDb.js';

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
  /** The configured COMPUTER resources: never a door of a level, even when a resource group holds them. */
  private readonly computers: ReadonlySet<number>;

  constructor(
    private readonly db: SqlDb,
    resources: readonly ServiceResource[] = [],
  ) {
    this.computers = new Set(resources.filter((r) => r.type === 'COMPUTER').map((r) => r.resourceId));
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

  async count(): Promise<number> {
    return (await this.db.value<number>('SELECT count(*) FROM policy_levels')) ?? 0;
  }

  async list(): Promise<Level[]> {
    return (await this.db.all<LevelRow>(`${SELECT_LEVELS} ORDER BY l.policy_id`)).map(LevelStore.fromRow);
  }

  async get(policyId: number): Promise<Level | undefined> {
    const row = await this.db.get<LevelRow>(`${SELECT_LEVELS} WHERE l.policy_id = ?`, [policyId]);
    return row && LevelStore.fromRow(row);
  }

  /** The level named `name` (compared without case), other than `except`. */
  async named(name: string, except?: number): Promise<Level | undefined> {
    const row = await this.db.get<LevelRow>(`${SELECT_LEVELS} WHERE lower(p.name) = lower(?) AND l.policy_id IS DISTINCT FROM ?`, [name, except ?? null]);
    return row && LevelStore.fromRow(row);
  }

  /** Whether a policy that is not a level (a guest link's) has this name: a level of that name would be theirs too. */
  async nameUsedByOtherPolicy(name: string): Promise<boolean> {
    const found = await this.db.value('SELECT 1 FROM policies WHERE lower(name) = lower(?) AND policy_id NOT IN (SELECT policy_id FROM policy_levels)', [name]);
    return found !== undefined;
  }

  async members(policyId: number): Promise<number[]> {
    return this.db.column<number>('SELECT email_id FROM policy_members WHERE policy_id = ? ORDER BY email_id', [policyId]);
  }

  async memberCounts(): Promise<Map<number, number>> {
    const rows = await this.db.all<{ policy_id: number; n: number }>(
      'SELECT policy_id, count(*) AS n FROM policy_members WHERE policy_id IN (SELECT policy_id FROM policy_levels) GROUP BY policy_id',
    );
    return new Map(rows.map((r) => [r.policy_id, r.n]));
  }

  /** A resource group by id (type resources), with its resource_type. */
  async resourceGroup(groupId: number): Promise<{ group_id: number; name: string; resource_type: 'COMPUTER' | 'DOOR' | null } | undefined> {
    return this.db.get<{ group_id: number; name: string; resource_type: 'COMPUTER' | 'DOOR' | null }>(
      "SELECT group_id, name, resource_type FROM groups WHERE group_id = ? AND type = 'resources'",
      [groupId],
    );
  }

  private async writeDefinition(policyId: number, def: LevelDefinition): Promise<void> {
    await this.db.run(
      `INSERT INTO policy_levels (policy_id, resource_ids, resource_group_id, schedule, start_time, end_time) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (policy_id) DO UPDATE SET resource_ids = excluded.resource_ids, resource_group_id = excluded.resource_group_id,
         schedule = excluded.schedule, start_time = excluded.start_time, end_time = excluded.end_time`,
      [
        policyId,
        JSON.stringify(sortedIds(def.resource_ids)),
        def.resource_group_id,
        def.schedule === null ? null : JSON.stringify(def.schedule),
        def.start_time,
        def.end_time,
      ],
    );
  }

  /** A new level with its members, in one transaction; returns its policy_id. */
  async create(name: string, def: LevelDefinition, members: readonly number[]): Promise<number> {
    return this.db.transaction(async () => {
      const policyId = Number(await this.db.value('INSERT INTO policies (name) VALUES (?) RETURNING policy_id', [name]));
      await this.writeDefinition(policyId, def);
      for (const id of members) await this.db.run('INSERT INTO policy_members (policy_id, email_id) VALUES (?, ?) ON CONFLICT DO NOTHING', [policyId, id]);
      return policyId;
    });
  }

  /** Replaces the name and definition and changes the members, in one transaction. */
  async update(policyId: number, name: string, def: LevelDefinition, add: readonly number[], del: readonly number[]): Promise<void> {
    await this.db.transaction(async () => {
      await this.db.run('UPDATE policies SET name = ? WHERE policy_id = ?', [name, policyId]);
      await this.writeDefinition(policyId, def);
      for (const id of add) await this.db.run('INSERT INTO policy_members (policy_id, email_id) VALUES (?, ?) ON CONFLICT DO NOTHING', [policyId, id]);
      for (const id of del) await this.db.run('DELETE FROM policy_members WHERE policy_id = ? AND email_id = ?', [policyId, id]);
    });
  }

  /** The level, its policy and its memberships, in one transaction. */
  async delete(policyId: number): Promise<void> {
    await this.db.transaction(async () => {
      await this.db.run('DELETE FROM policy_members WHERE policy_id = ?', [policyId]);
      await this.db.run('DELETE FROM policy_levels WHERE policy_id = ?', [policyId]);
      await this.db.run('DELETE FROM policies WHERE policy_id = ?', [policyId]);
    });
  }

  /**
   * GET /directory's `levels` (sorted by name; each level's doors resolved: its listed ids and its group's current
   * members, computers left out) and `resource_groups` (every resource group, sorted by name, its members as held).
   * The names are sorted here, not by the database, so both engines give the same order. Read in one transaction
   * (the caller's, when it has one), so the groups and the levels are of one moment.
   */
  forDirectory(): Promise<{ levels: DirectoryLevel[]; resource_groups: DirectoryResourceGroup[] }> {
    return this.db.transaction(() => this.readForDirectory());
  }

  private async readForDirectory(): Promise<{ levels: DirectoryLevel[]; resource_groups: DirectoryResourceGroup[] }> {
    const groups = new Map<number, { name: string; members: number[] }>();
    for (const g of await this.db.all<{ group_id: number; name: string }>("SELECT group_id, name FROM groups WHERE type = 'resources' ORDER BY group_id")) {
      groups.set(g.group_id, { name: g.name, members: [] });
    }
    // By group first: ordered by member alone, SQLite walks every user's membership by group_members_by_member.
    const members = await this.db.all<{ group_id: number; member_id: number }>(
      "SELECT m.group_id, m.member_id FROM group_members m JOIN groups g USING (group_id) WHERE g.type = 'resources' ORDER BY g.group_id, m.member_id",
    );
    for (const m of members) groups.get(m.group_id)?.members.push(m.member_id);
    const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    const levels = (await this.list())
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
