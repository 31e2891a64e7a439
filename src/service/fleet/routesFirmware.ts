import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { fileStoredSchema, fleetTaskSchema, fleetTasksAnswerSchema } from '../../api/fleetUpdates.js';
import { documented } from '../openapi/routeDoc.js';
import { callerOf } from '../keyCheck.js';
import { BadRequest, intParam, jsonArrayParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { operatorOrAgent } from './agentKey.js';
import { agentParams, fleetOf } from './fleetDeps.js';
import { FleetAgents } from './fleetAgents.js';
import { FleetReports } from './fleetReports.js';
import { Firmware, type StoredFile, type StoredTask } from './firmware.js';
import { UPLOAD_TYPE, receiveToBuffer, uploadScope } from './uploads.js';

/** The largest firmware file taken: what a task's file may be (firmwareTaskSchema). */
const MAX_FILE_BYTES = 16 << 20;

const fileParams = z.object({
  name: z
    .string({ error: "the file's name is required (?name=...)" })
    .regex(/^[^/\\]{1,128}$/, 'must be a file name: 1 to 128 characters, no "/" or "\\"')
    .refine((name) => !/\p{Cc}/u.test(name), 'must be a file name: no control character')
    .describe("the firmware file's name, as the operator knows it (the reader's vendor names it)"),
});
const filePath = z.object({
  file_id: z
    .string()
    .regex(/^[1-9]\d{0,14}$/, 'must be a file id: 1, 2, ...')
    .transform(Number)
    .describe('the firmware file'),
});
const taskParams = z.object({
  readers: jsonArrayParam(z.string().trim().min(1, 'a reader name is not empty').max(128, 'a reader name has at most 128 characters'), {
    field: 'readers',
    max: 64,
  })
    .refine((names) => names.length > 0, 'name at least one reader')
    .refine((names) => new Set(names).size === names.length, 'names a reader twice')
    .describe("the agent's readers to update, one at a time, by name (as its configuration names them)"),
  file_id: intParam.pipe(z.number().int().positive('must be a file id: 1, 2, ...')).describe('the firmware file (POST /fleet/files)'),
});

const iso = (ms: number) => new Date(ms).toISOString();
const fileShown = (f: StoredFile) => ({ file_id: f.fileId, name: f.name, sha256: f.sha256, size: f.size });
const taskShown = (t: StoredTask) => ({
  task_id: t.taskId,
  agent_id: t.agentId,
  kind: 'reader_firmware' as const,
  readers: t.readers,
  file: fileShown(t.file),
  state: t.state,
  detail: t.detail,
  created_at: iso(t.createdAt),
  created_by: t.createdBy,
  updated_at: iso(t.updatedAt),
});
const by = (request: FastifyRequest) => callerOf(request);

/**
 * Reader firmware (docs/fleet.md, "Reader firmware"), ADMIN: upload a reader's firmware file, ask an agent to send
 * it to some of its readers (a task its exchange carries), list the agent's tasks. The agent fetches the file with
 * its own DOOR key while a task of its names it, and reports each task (POST /fleet/self/report).
 */
export function registerFirmwareRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const firmware = new Firmware(ctx.db);
  const agents = new FleetAgents(ctx.db);
  const reports = new FleetReports(ctx.db);
  const notFleet = 'This service has no server.fleet section.';

  /** The adopted agent of that id, or a 404 naming it. */
  const adopted = async (agentId: string) => {
    if (!(await reports.isAdopted(agentId))) throw new BadRequest(`no adopted agent ${agentId}`, 404);
  };

  uploadScope(app, (scope) => {
    scope.post(
      '/fleet/files',
      documented({
        summary: "Stores a reader's firmware file, for the tasks that send it.",
        tag: 'Fleet',
        key: 'ADMIN',
        params: fileParams,
        rawBody: { type: UPLOAD_TYPE, description: 'the firmware file, at most 16 MiB' },
        answer: fileStoredSchema,
        statuses: { 404: notFleet, 413: 'The file is over 16 MiB.' },
      }),
      async (request) => {
        ctx.requireRank(request, 'ADMIN');
        fleetOf(ctx);
        const { name } = parseParams(fileParams, request.query, undefined);
        const received = await receiveToBuffer(request, 'the firmware file', MAX_FILE_BYTES, 'the 16 MiB a firmware file may have');
        const stored = await firmware.addFile(name, received.bytes, received.sha256, by(request), ctx.clock.wallNow());
        ctx.logger.info({ file: stored.fileId, name, size: stored.size }, 'reader firmware file stored');
        return fileShown(stored);
      },
    );
  });

  app.get(
    '/fleet/files/:file_id',
    documented({
      summary: 'A firmware file, as uploaded.',
      description: 'An ADMIN key, or the DOOR key of an agent with a waiting or running task that sends this file.',
      tag: 'Fleet',
      key: 'any',
      pathParams: filePath,
      answer: z.string(),
      rawAnswer: { type: UPLOAD_TYPE, description: 'the firmware file' },
      statuses: { 404: `No such file. ${notFleet}` },
    }),
    async (request, reply) => {
      fleetOf(ctx);
      const { file_id: id } = parseParams(filePath, request.params, undefined);
      await operatorOrAgent(request, agents, `firmware file ${id}`, (agentId) => firmware.agentMayFetch(agentId, id));
      const [file, content] = await Promise.all([firmware.file(id), firmware.content(id)]);
      if (!file || !content) throw new BadRequest(`no firmware file ${id}`, 404);
      return reply
        .type(UPLOAD_TYPE)
        .header('content-disposition', `attachment; filename="${file.name.replace(/["\\]/g, '_')}"`)
        .send(content);
    },
  );

  app.post(
    '/fleet/agents/:agent_id/reader-firmware',
    documented({
      summary: 'Asks an agent to send a firmware file to some of its readers, one at a time: a task, waiting for its next exchange.',
      tag: 'Fleet',
      key: 'ADMIN',
      pathParams: agentParams,
      params: taskParams,
      answer: fleetTaskSchema,
      statuses: { 404: `No adopted agent of that id, or no such file. ${notFleet}`, 409: 'The agent has 16 tasks under way already.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      const { agent_id } = parseParams(agentParams, request.params, undefined);
      const p = parseParams(taskParams, request.query, request.body);
      await adopted(agent_id);
      const task = await firmware.createTask(agent_id, p.readers, p.file_id, by(request), ctx.clock.wallNow());
      ctx.logger.info({ agent: agent_id, task: task.taskId, file: task.file.fileId, readers: task.readers.length }, 'reader firmware task created');
      return taskShown(task);
    },
  );

  app.get(
    '/fleet/agents/:agent_id/tasks',
    documented({
      summary: "An agent's reader firmware tasks and where each stands, the newest first.",
      tag: 'Fleet',
      key: 'ADMIN',
      pathParams: agentParams,
      answer: fleetTasksAnswerSchema,
      statuses: { 404: `No adopted agent of that id. ${notFleet}` },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      const { agent_id } = parseParams(agentParams, request.params, undefined);
      await adopted(agent_id);
      return { tasks: (await firmware.tasksOf(agent_id)).map(taskShown) };
    },
  );
}
