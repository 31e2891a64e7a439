import type { firmwareTaskSchema, FleetReport } from '../../api/fleet.js';
import type * as z from 'zod';
import { BadRequest } from '../badRequest.js';
import type { SqlDb } from '../sql/sqlDb.js';

/*
 * Reader firmware sent from the service (docs/fleet.md, "Reader firmware"): an operator uploads a reader's firmware
 * file (fleet_files) and asks an agent to send it to some of its readers (a task, fleet_tasks). The agent finds
 * its waiting and running tasks in its exchange (GET /fleet/self), fetches the file with its own key, and reports
 * each task running, then done or failed.
 */

export type FirmwareTask = z.infer<typeof firmwareTaskSchema>;
export type TaskState = 'waiting' | 'running' | 'done' | 'failed';

/** The most tasks an agent has under way at once: what one exchange carries (fleetExchangeSchema). */
const MAX_OPEN_TASKS = 16;

export interface StoredFile {
  fileId: number;
  name: string;
  sha256: string;
  size: number;
}

export interface StoredTask {
  taskId: number;
  agentId: string;
  readers: string[];
  file: StoredFile;
  state: TaskState;
  detail: string;
  /** ms */
  createdAt: number;
  createdBy: string;
  updatedAt: number;
}

interface TaskRow {
  task_id: number | string;
  agent_id: string;
  readers: string;
  state: TaskState;
  detail: string;
  created_at: number | string;
  created_by: string;
  updated_at: number | string;
  file_id: number | string;
  name: string;
  sha256: string;
  size: number | string;
}

const TASK_SELECT =
  'SELECT t.task_id, t.agent_id, t.readers, t.state, t.detail, t.created_at, t.created_by, t.updated_at, f.file_id, f.name, f.sha256, f.size ' +
  'FROM fleet_tasks t JOIN fleet_files f ON f.file_id = t.file_id';

const fileOf = (row: { file_id: number | string; name: string; sha256: string; size: number | string }): StoredFile => ({
  fileId: Number(row.file_id),
  name: row.name,
  sha256: row.sha256,
  size: Number(row.size),
});

const taskOf = (row: TaskRow): StoredTask => ({
  taskId: Number(row.task_id),
  agentId: row.agent_id,
  readers: JSON.parse(row.readers) as string[],
  file: fileOf(row),
  state: row.state,
  detail: row.detail,
  createdAt: Number(row.created_at),
  createdBy: row.created_by,
  updatedAt: Number(row.updated_at),
});

/** Where an agent fetches a firmware file (GET with its own key while a task of its names it). */
const filePath = (fileId: number) => `/fleet/files/${fileId}`;

export class Firmware {
  constructor(private readonly db: SqlDb) {}

  /** Stores a firmware file (its bytes whole: at most 16 MiB) and returns it. */
  async addFile(name: string, bytes: Buffer, sha256: string, by: string, now: number): Promise<StoredFile> {
    const id = await this.db.value<number | string>(
      'INSERT INTO fleet_files (name, sha256, size, content, uploaded_at, uploaded_by) VALUES (?, ?, ?, ?, ?, ?) RETURNING file_id',
      [name, sha256, bytes.length, bytes, now, by],
    );
    return { fileId: Number(id), name, sha256, size: bytes.length };
  }

  async file(fileId: number): Promise<StoredFile | undefined> {
    const row = await this.db.get<{ file_id: number; name: string; sha256: string; size: number }>(
      'SELECT file_id, name, sha256, size FROM fleet_files WHERE file_id = ?',
      [fileId],
    );
    return row ? fileOf(row) : undefined;
  }

  async content(fileId: number): Promise<Buffer | undefined> {
    const bytes = await this.db.value<Buffer | Uint8Array>('SELECT content FROM fleet_files WHERE file_id = ?', [fileId]);
    return bytes === undefined ? undefined : Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  }

  /** Whether a waiting or running task of the agent names the file (it may then fetch it with its own key). */
  async agentMayFetch(agentId: string, fileId: number): Promise<boolean> {
    const task = await this.db.value<number>("SELECT task_id FROM fleet_tasks WHERE agent_id = ? AND file_id = ? AND state IN ('waiting', 'running')", [
      agentId,
      fileId,
    ]);
    return task !== undefined;
  }

  /**
   * A new task: send file `fileId` to the agent's `readers`, waiting for the agent's next exchange. 404 for an
   * unknown file, 409 when the agent has MAX_OPEN_TASKS under way already. The caller checked the agent is adopted.
   */
  createTask(agentId: string, readers: readonly string[], fileId: number, by: string, now: number): Promise<StoredTask> {
    return this.db.transaction(async () => {
      if ((await this.file(fileId)) === undefined) throw new BadRequest(`file_id: no firmware file ${fileId} (POST /fleet/files uploads one)`, 404);
      const open = Number(
        await this.db.value<number | string>("SELECT count(*) FROM fleet_tasks WHERE agent_id = ? AND state IN ('waiting', 'running')", [agentId]),
      );
      if (open >= MAX_OPEN_TASKS) {
        throw new BadRequest(`${agentId} has ${open} tasks waiting or running, the most it takes at once: wait for them to end`, 409);
      }
      const id = await this.db.value<number | string>(
        "INSERT INTO fleet_tasks (agent_id, kind, readers, file_id, state, created_at, created_by, updated_at) VALUES (?, 'reader_firmware', ?, ?, 'waiting', ?, ?, ?) RETURNING task_id",
        [agentId, JSON.stringify(readers), fileId, now, by, now],
      );
      return (await this.task(Number(id)))!;
    });
  }

  async task(taskId: number): Promise<StoredTask | undefined> {
    const row = await this.db.get<TaskRow>(`${TASK_SELECT} WHERE t.task_id = ?`, [taskId]);
    return row ? taskOf(row) : undefined;
  }

  /** The agent's tasks, the newest first. */
  async tasksOf(agentId: string): Promise<StoredTask[]> {
    return (await this.db.all<TaskRow>(`${TASK_SELECT} WHERE t.agent_id = ? ORDER BY t.task_id DESC`, [agentId])).map(taskOf);
  }

  /** The agent's waiting and running tasks as its exchange carries them, the oldest first. */
  async tasksFor(agentId: string): Promise<FirmwareTask[]> {
    const rows = await this.db.all<TaskRow>(
      `${TASK_SELECT} WHERE t.agent_id = ? AND t.state IN ('waiting', 'running') ORDER BY t.task_id LIMIT ${MAX_OPEN_TASKS}`,
      [agentId],
    );
    return rows.map(taskOf).map((t) => ({
      task_id: t.taskId,
      kind: 'reader_firmware' as const,
      readers: t.readers,
      file: { name: t.file.name, sha256: t.file.sha256, size: t.file.size, path: filePath(t.file.fileId) },
    }));
  }

  /**
   * Records the tasks part of an agent's report: each of its own tasks still waiting or running takes the state and
   * detail reported; a task of another agent, or one that ended already, is left as it is. How many changed.
   */
  recordTaskReports(agentId: string, reports: NonNullable<FleetReport['tasks']>, now: number): Promise<number> {
    return this.db.transaction(async () => {
      let changed = 0;
      for (const r of reports) {
        const result = await this.db.run(
          "UPDATE fleet_tasks SET state = ?, detail = ?, updated_at = ? WHERE task_id = ? AND agent_id = ? AND state IN ('waiting', 'running')",
          [r.state, r.detail, now, r.task_id, agentId],
        );
        changed += result.changes;
      }
      return changed;
    });
  }
}
