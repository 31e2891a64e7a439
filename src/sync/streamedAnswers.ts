import * as z from 'zod';
import {
  directoryLevelsSchema,
  directoryRestoreSchema,
  resourceGroupsSchema,
  userDetailSchema,
  userListItemSchema,
  type DirectoryLevel,
  type ResourceGroup,
  type UserDetail,
} from '../api/shapes.js';
import type { ServiceLevels } from '../store/serviceLevels.js';
import { JsonMemberStream, JsonSyntaxError, type StreamedMember } from '../snapshot/jsonStream.js';
import { toStagedDetail, toStagedUser } from '../store/toStaged.js';
import type { Db } from '../store/database.js';
import type { SnapshotStage } from '../store/snapshotStage.js';
import { clearDeltaScope, DeltaScope, UntaggedUsers } from '../store/stageScope.js';
import { historySchema, tagSchema, type DirectoryVersion } from '../protocol/directory.js';
import { formatPath } from '../util/issues.js';
import type { ResponseSpool } from './responseSpool.js';
import { ServiceError } from './serviceClient.js';

/**
 * The service's large answers (GET /multipleusers, GET /directory) read member by member from their spool into
 * the stage: every member validated with zod as it comes, never the whole answer parsed at once, so a directory
 * of 250,000 users fits the agent's heap. The first problem is thrown as a ServiceError naming the endpoint and
 * the JSON path; the caller then drops the stage and the cache stays as it was.
 */

const MAX_MEMBER_BYTES = 16 << 20;
const NO_SECTIONS = { arrays: new Set<string>(), objects: new Set<string>() };
const DIRECTORY_SECTIONS = { arrays: new Set(['users', 'removed']), objects: new Set(['details']) };
const emailIdSchema = z.number().int().nonnegative();
// Built once: a zod schema costs more to build than to run on a small value.
const fullSchema = z.boolean();
const nullableTagSchema = tagSchema.nullable();
const restoreMemberSchema = directoryRestoreSchema.nullable().transform((r) => (r === null ? null : { detectedAt: r.detected_at, reason: r.reason }));

function invalid(endpoint: string, where: string, message: string): ServiceError {
  return new ServiceError(`GET ${endpoint}: ${where}: ${message}`, endpoint, 200);
}

function parse<T>(endpoint: string, raw: string, schema: z.ZodType<T>, path: PropertyKey[]): T {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw invalid(endpoint, formatPath(path, '$'), 'not valid JSON');
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const first = result.error.issues[0]!;
    throw invalid(endpoint, formatPath([...path, ...first.path], '$'), first.message.replace(/^Invalid input: /, ''));
  }
  return result.data;
}

/** The parser's members; a broken structure becomes a ServiceError (a truncated body says so). */
function* membersOf<M extends StreamedMember>(endpoint: string, members: Generator<M>): Generator<M> {
  try {
    yield* members;
  } catch (err) {
    if (!(err instanceof JsonSyntaxError)) throw err;
    const what = /truncated/.test(err.message)
      ? `the body is not complete JSON (it ends at byte ${err.byteOffset})`
      : `the body is not valid JSON (${err.message})`;
    throw new ServiceError(`GET ${endpoint}: ${what}`, endpoint, 200, { cause: err });
  }
}

/**
 * GET /multipleusers into the stage, and, when some users came without user_tag, GET /multipleusers?user_tag=GUEST
 * to tag the guests among them (docs/sync.md, "Which users are guests"). Returns how many users were listed.
 */
export async function stageUserList(db: Db, stage: SnapshotStage, list: () => Promise<ResponseSpool>, guests: () => Promise<ResponseSpool>): Promise<number> {
  const endpoint = '/multipleusers';
  const untagged = new UntaggedUsers(db);
  try {
    let count = 0;
    const body = await list();
    try {
      db.transaction(() => {
        for (const member of membersOf(endpoint, new JsonMemberStream(body.source(), { ...NO_SECTIONS, maxValueBytes: MAX_MEMBER_BYTES }).elements(''))) {
          const item = parse(endpoint, member.raw, userListItemSchema, [member.index]);
          if (!stage.addUser(toStagedUser(item, item.user_tag ?? 'USER')))
            throw invalid(endpoint, formatPath([member.index, 'email_id'], '$'), `email_id ${item.email_id} is listed twice`);
          if (item.user_tag === undefined) untagged.add(item.email_id);
          count++;
        }
      })();
    } finally {
      body.dispose();
    }
    if (untagged.count() === 0) return count;
    const guestBody = await guests();
    try {
      db.transaction(() => {
        for (const member of membersOf(endpoint, new JsonMemberStream(guestBody.source(), { ...NO_SECTIONS, maxValueBytes: MAX_MEMBER_BYTES }).elements(''))) {
          untagged.markGuest(parse(`${endpoint}?user_tag=GUEST`, member.raw, userListItemSchema, [member.index]).email_id);
        }
      })();
    } finally {
      guestBody.dispose();
    }
    return count;
  } finally {
    untagged.clear();
  }
}

/**
 * GET /user for every staged user, at most `concurrency` at a time, each detail staged as it arrives (in batches,
 * so neither the ids nor the details are ever all in memory). The first failure stops new requests and is thrown.
 */
export async function stageDetails(
  db: Db,
  stage: SnapshotStage,
  fetchDetail: (emailId: number) => Promise<UserDetail>,
  options: { concurrency: number; total: number; onProgress?: (done: number, total: number) => void },
): Promise<void> {
  let ids: number[] = [];
  let nextIndex = 0;
  let last = -1;
  const nextId = (): number | undefined => {
    if (nextIndex >= ids.length) {
      ids = stage.userIdsAfter(last, 500);
      nextIndex = 0;
      if (ids.length === 0) return undefined;
      last = ids[ids.length - 1]!;
    }
    return ids[nextIndex++];
  };
  let arrived: Array<[number, UserDetail]> = [];
  const flush = db.transaction(() => {
    for (const [emailId, detail] of arrived) stage.addDetail(toStagedDetail(emailId, detail));
    arrived = [];
  });
  let done = 0;
  let failed: unknown = null;
  options.onProgress?.(0, options.total);
  const worker = async () => {
    for (let id = nextId(); failed === null && id !== undefined; id = failed === null ? nextId() : undefined) {
      try {
        const detail = await fetchDetail(id);
        arrived.push([id, detail]); // after the await: a flush meanwhile replaced the array
        if (arrived.length >= 256) flush();
        options.onProgress?.(++done, options.total);
      } catch (err) {
        failed ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  if (failed !== null) throw failed;
  flush();
  // Every listed user must now have their detail: a user staged without cards would silently lose them.
  for (const id of stage.usersWithoutDetails(1)) throw new ServiceError(`GET /user: no detail staged for email_id ${id}`, '/user', null);
}

/** What a GET /directory answer says of itself: its version (history and tag null from an older service) and whether it is full. */
export interface DirectoryAnswerHead extends DirectoryVersion {
  full: boolean;
  /** The service's access levels and resource groups; null: the answer has none (a service without them). */
  levels: ServiceLevels | null;
  /** The restore of the service's database awaiting acceptance there (its `restore`); null: none, or an older service. */
  restore: { detectedAt: string; reason: string } | null;
}

/**
 * A GET /directory answer into the stage: `users` and `details` as a full answer lists them, and for a delta the
 * scope (store/stageScope.ts: the users it replaces or removes). Returns its version and whether it is full.
 */
export function stageDirectory(db: Db, stage: SnapshotStage, body: ResponseSpool): DirectoryAnswerHead {
  const endpoint = '/directory';
  const scope = new DeltaScope(db);
  try {
    let revision: number | undefined;
    let full: boolean | undefined;
    let history: string | null = null;
    let tag: string | null = null;
    let levels: DirectoryLevel[] | undefined;
    let resourceGroups: ResourceGroup[] | undefined;
    let restore: DirectoryAnswerHead['restore'] = null;
    const seen = new Set<string>();
    db.transaction(() => {
      const stream = new JsonMemberStream(body.source(), { ...DIRECTORY_SECTIONS, maxValueBytes: MAX_MEMBER_BYTES });
      for (const member of membersOf(endpoint, stream.members())) {
        seen.add(member.section);
        if (member.kind === 'value') {
          if (member.section === 'revision') revision = parse(endpoint, member.raw, emailIdSchema, ['revision']);
          else if (member.section === 'full') full = parse(endpoint, member.raw, fullSchema, ['full']);
          else if (member.section === 'history') history = parse(endpoint, member.raw, historySchema, ['history']);
          else if (member.section === 'tag') tag = parse(endpoint, member.raw, nullableTagSchema, ['tag']);
          else if (member.section === 'levels') levels = parse(endpoint, member.raw, directoryLevelsSchema, ['levels']);
          else if (member.section === 'resource_groups') resourceGroups = parse(endpoint, member.raw, resourceGroupsSchema, ['resource_groups']);
          else if (member.section === 'restore') restore = parse(endpoint, member.raw, restoreMemberSchema, ['restore']);
          else if (DIRECTORY_SECTIONS.arrays.has(member.section)) throw invalid(endpoint, `$.${member.section}`, 'expected an array');
          else if (DIRECTORY_SECTIONS.objects.has(member.section)) throw invalid(endpoint, `$.${member.section}`, 'expected an object keyed by email_id');
          // other members: an extension this agent does not know; ignored
        } else if (member.kind === 'element' && member.section === 'users') {
          const path = ['users', member.index];
          const item = parse(endpoint, member.raw, userListItemSchema, path);
          if (item.user_tag === undefined) throw invalid(endpoint, formatPath([...path, 'user_tag'], '$'), 'required');
          if (!stage.addUser(toStagedUser(item, item.user_tag)))
            throw invalid(endpoint, formatPath([...path, 'email_id'], '$'), `email_id ${item.email_id} is listed twice`);
          scope.addListed(item.email_id);
        } else if (member.kind === 'element') {
          scope.addRemoved(parse(endpoint, member.raw, emailIdSchema, ['removed', member.index]));
        } else if (member.kind === 'entry') {
          const path = ['details', member.key];
          if (!/^[0-9]{1,15}$/.test(member.key)) throw invalid(endpoint, formatPath(path, '$'), 'expected an email_id as the key');
          const detail = parse(endpoint, member.raw, userDetailSchema, path);
          if (!stage.addDetail(toStagedDetail(Number(member.key), detail)))
            throw invalid(endpoint, formatPath(path, '$'), `a second entry for email_id ${Number(member.key)}`);
        }
      }
    })();
    for (const section of ['revision', 'full', 'users', 'details', 'removed']) {
      if (!seen.has(section)) throw invalid(endpoint, `$.${section}`, 'required');
    }
    for (const id of stage.usersWithoutDetails(1)) throw invalid(endpoint, formatPath(['details', String(id)], '$'), 'missing');
    for (const id of stage.detailsWithoutUsers(1)) throw invalid(endpoint, formatPath(['details', String(id)], '$'), `no user with email_id ${id} in users`);
    const both = scope.removedAndListed();
    if (both !== undefined) throw invalid(endpoint, '$.removed', `email_id ${both} is also listed in users`);
    const serviceLevels = levels === undefined && resourceGroups === undefined ? null : { levels: levels ?? [], resourceGroups: resourceGroups ?? [] };
    return { revision: revision!, full: full!, history, tag, levels: serviceLevels, restore };
  } finally {
    scope.clearRemoved();
  }
}

/** Empties what stageDirectory left for the merge. */
export const clearDirectoryScope = clearDeltaScope;
