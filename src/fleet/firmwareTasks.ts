import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import * as z from 'zod';
import type { FleetReport, firmwareTaskSchema } from '../api/fleet.js';
import type { FirmwareRequest, FirmwareResult } from '../door/readerFirmware.js';
import { writeWhole } from '../util/wholeFile.js';
import { fleetDir } from './appliedConfig.js';
import { DownloadRefused, downloadBytes } from './downloads.js';
import type { FleetExchange } from './fleetClient.js';
import type { ExchangeHandler } from './fleetComponent.js';
import type { ReportPart } from './fleetReporter.js';

type FirmwareTask = z.infer<typeof firmwareTaskSchema>;
type TaskReport = NonNullable<FleetReport['tasks']>[number];

/** How many ended tasks the record keeps. */
const MAX_RECORDED = 200;
/** A report carries at most this many tasks (api/fleet.ts). */
const MAX_REPORTED = 16;

const endedSchema = z.array(z.object({ task_id: z.number().int().positive(), state: z.enum(['done', 'failed']), detail: z.string() }));
const recordPath = (dataDir: string) => join(fleetDir(dataDir), 'firmware-tasks.json');

function readRecord(dataDir: string): TaskReport[] {
  try {
    const parsed = endedSchema.safeParse(JSON.parse(readFileSync(recordPath(dataDir), 'utf8')));
    return parsed.success ? parsed.data : [];
  } catch {
    return []; // none yet (or not one: started again)
  }
}

/** Reader firmware over OSDP, one reader at a time (door/readerFirmware.ts). */
export interface FirmwareSender {
  readonly busy: string | null;
  transferFirmware(readerName: string, bytes: Buffer, onProgress?: undefined, request?: FirmwareRequest): Promise<FirmwareResult>;
}

/**
 * Reader firmware tasks from the service (docs/fleet.md, "Reader firmware"): each task, in order and one at a time,
 * has its file downloaded (size and SHA-256 as the service said), is reported running, and the file sent to each
 * reader it names in turn; then it is reported done (each reader's firmware) or failed (the first reason: the
 * readers after it are not touched). A task that ended is kept in `<dataDir>/fleet/firmware-tasks.json` and never
 * run again; its report is sent again while the service still lists it.
 */
export class FirmwareTasks implements ExchangeHandler {
  readonly name = 'reader firmware tasks';
  private ended: TaskReport[];
  private shown = new Map<number, TaskReport>();

  constructor(
    private readonly deps: {
      dataDir: string;
      /** GET a path of the service with the agent's key (FleetClient.open). */
      open: (path: string) => Promise<AsyncIterable<Buffer> & { destroy(): void }>;
      reporter: { set(part: ReportPart): void; flush(): Promise<void> };
      firmware: FirmwareSender;
      logger: Logger;
    },
  ) {
    this.ended = readRecord(deps.dataDir);
  }

  async handle(exchange: FleetExchange): Promise<void> {
    // The service lists a task until it has its end: one it lists that ended here is reported again.
    this.shown = new Map();
    for (const task of exchange.tasks) {
      const ended = this.ended.find((e) => e.task_id === task.task_id);
      if (ended) this.shown.set(task.task_id, ended);
    }
    this.publish();
    for (const task of exchange.tasks) {
      if (this.shown.has(task.task_id)) continue;
      if (!(await this.run(task))) return;
    }
  }

  /** One task; false when it could not start now (tried again at the next exchange). */
  private async run(task: FirmwareTask): Promise<boolean> {
    const { logger, firmware } = this.deps;
    const log = logger.child({ task: task.task_id });
    if (firmware.busy !== null) {
      log.info(`reader firmware task ${task.task_id} waits: a transfer is under way (${firmware.busy})`);
      return false;
    }
    const { file } = task;
    let bytes: Buffer;
    try {
      bytes = await downloadBytes(await this.deps.open(file.path), { what: `firmware file ${file.name}`, size: file.size, sha256: file.sha256 });
    } catch (err) {
      if (err instanceof DownloadRefused) {
        this.end(task, 'failed', `${err.message}; no reader was touched`);
        return true;
      }
      log.warn({ err: { message: (err as Error).message } }, `cannot download ${file.name} for task ${task.task_id}: tried again at the next exchange`);
      return false;
    }
    this.shown.set(task.task_id, { task_id: task.task_id, state: 'running', detail: `sending ${file.name} to ${task.readers.join(', ')}, one at a time` });
    this.publish();
    await this.deps.reporter.flush().catch((err: unknown) => log.warn({ err: { message: (err as Error).message } }, 'fleet: cannot report the task running'));
    const done: string[] = [];
    for (const reader of task.readers) {
      log.info({ reader, file: file.name }, `reader firmware task ${task.task_id}: sending ${file.name} to ${reader}`);
      const result = await firmware.transferFirmware(reader, bytes, undefined, { name: file.name, by: { origin: 'fleet', task_id: task.task_id } });
      if (!result.ok) {
        const untouched = task.readers.slice(done.length + 1);
        const after = untouched.length > 0 ? `; not sent to ${untouched.join(', ')}` : '';
        const running = result.version === null ? '' : ` (it runs firmware ${result.version})`;
        this.end(task, 'failed', `${reader}: ${result.reason}${running}${after}`);
        return true;
      }
      done.push(`${reader} runs firmware ${result.version}${result.previous === null ? '' : ` (was ${result.previous})`}`);
    }
    this.end(task, 'done', done.join('; '));
    return true;
  }

  private end(task: FirmwareTask, state: 'done' | 'failed', detail: string): void {
    const report = { task_id: task.task_id, state, detail: detail.length > 2000 ? `${detail.slice(0, 1999)}…` : detail };
    this.ended = [...this.ended.filter((e) => e.task_id !== task.task_id), report].slice(-MAX_RECORDED);
    mkdirSync(fleetDir(this.deps.dataDir), { recursive: true, mode: 0o700 });
    writeWhole(recordPath(this.deps.dataDir), `${JSON.stringify(this.ended)}\n`);
    this.shown.set(task.task_id, report);
    this.publish();
    const log = this.deps.logger.child({ task: task.task_id });
    if (state === 'done') log.info(`reader firmware task ${task.task_id} done: ${detail}`);
    else log.warn(`reader firmware task ${task.task_id} failed: ${detail}`);
  }

  private publish(): void {
    if (this.shown.size === 0) return;
    this.deps.reporter.set({ tasks: [...this.shown.values()].slice(-MAX_REPORTED) });
  }
}
