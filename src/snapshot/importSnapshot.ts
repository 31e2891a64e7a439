import { closeSync, fstatSync, openSync } from 'node:fs';
import * as z from 'zod';
import { guestLinkSchema, userDetailSchema, userListItemSchema } from '../api/shapes.js';
import type { Db } from '../store/database.js';
import { forgetHeldRevision } from '../store/heldRevision.js';
import { writeMeta } from '../store/meta.js';
import { mergeStage, type MergeSummary } from '../store/snapshotMerge.js';
import { SnapshotStage } from '../store/snapshotStage.js';
import { DoorAgentError, InputError, describeFsError, errorCode } from '../util/errors.js';
import { formatPath, problemsFromZod, type Problem } from '../util/issues.js';
import { JsonMemberStream, JsonSyntaxError } from './jsonStream.js';
import { toStagedDetail, toStagedLink, toStagedUser } from '../store/toStaged.js';

export interface ImportOptions {
  /** service.maxRemovalRatio, or null to allow any removal (--allow-mass-removal). */
  maxRemovalRatio: number | null;
  now: number;
}

export interface ImportResult extends MergeSummary {
  file: string;
  durationMs: number;
}

const MAX_PROBLEMS = 50;
const MAX_VALUE_BYTES = 16 << 20;
const SECTIONS = { arrays: new Set(['users', 'guest_links']), objects: new Set(['details']) };

class ProblemList {
  readonly items: Problem[] = [];
  total = 0;
  add(...problems: Problem[]): void {
    for (const p of problems) {
      this.total++;
      if (this.items.length < MAX_PROBLEMS) this.items.push(p);
    }
  }
  get any(): boolean {
    return this.total > 0;
  }
}

function parseMember<T>(raw: string, schema: z.ZodType<T>, path: PropertyKey[], problems: ProblemList): T | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    // Only the position: V8's message quotes the text around it, which may be a card number or a token.
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    problems.add({ path: formatPath(path, '$'), message: `not valid JSON${position ? ` (at character ${position} of this value)` : ''}` });
    return undefined;
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    problems.add(...problemsFromZod(result.error.issues, path, '$'));
    return undefined;
  }
  return result.data;
}

/**
 * Loads a snapshot file (docs/snapshot-format.md) into the cache in one transaction. The file is streamed, so its size
 * is bounded by disk, not memory. Every problem is collected with its JSON path; if there is any, or the
 * mass-removal guard refuses, nothing changes. Unchanged rows are not rewritten.
 */
export function importSnapshot(db: Db, file: string, options: ImportOptions): ImportResult {
  const started = performance.now();
  let fd: number;
  try {
    fd = openSync(file, 'r');
    if (fstatSync(fd).isDirectory()) {
      closeSync(fd);
      throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    }
  } catch (err) {
    throw new DoorAgentError(`cannot read snapshot ${file}: ${describeFsError(err)}`, { cause: err });
  }
  const stage = new SnapshotStage(db);
  try {
    // The file is streamed into temporary tables first, in a transaction that touches only the connection's
    // own temp database: the cache's write lock is not taken while the file is read and validated, so a
    // running daemon is never kept waiting for a large import. Only the merge below holds the write lock.
    db.transaction(() => streamIntoStage(fd, file, stage))();
    const summary = db
      .transaction(() => {
        const result = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio });
        // The users now held did not come from the service's revision: the next sync must be a full one.
        forgetHeldRevision(db);
        writeMeta(db, 'last_import', {
          at: new Date(options.now).toISOString(),
          file,
          users: result.users,
          credentials: result.credentials,
          guestLinks: result.guestLinks,
        });
        return result;
      })
      .immediate();
    return { ...summary, file, durationMs: performance.now() - started };
  } catch (err) {
    if (err instanceof DoorAgentError) throw err;
    // SQLite failures (busy, disk full, I/O): the transaction was rolled back.
    const code = errorCode(err);
    const hint = code === 'SQLITE_BUSY' ? ' (another door-agent process is writing the cache: try again)' : '';
    throw new DoorAgentError(`snapshot ${file} was not imported, the cache is unchanged: ${(err as Error).message}${hint}`, { cause: err });
  } finally {
    stage.clear();
    closeSync(fd);
  }
}

function streamIntoStage(fd: number, file: string, stage: SnapshotStage): void {
  const problems = new ProblemList();
  const seen = new Set<string>();
  const stream = new JsonMemberStream(fd, { ...SECTIONS, maxValueBytes: MAX_VALUE_BYTES });
  try {
    for (const member of stream.members()) {
      seen.add(member.section);
      if (member.kind === 'value') {
        if (SECTIONS.arrays.has(member.section)) {
          problems.add({ path: `$.${member.section}`, message: 'expected an array' });
        } else if (SECTIONS.objects.has(member.section)) {
          problems.add({ path: `$.${member.section}`, message: 'expected an object keyed by email_id' });
        }
        // Unknown top-level members are tolerated, but must still be JSON.
        else parseMember(member.raw, z.unknown(), [member.section], problems);
        continue;
      }
      if (member.kind === 'element' && member.section === 'users') {
        const path = ['users', member.index];
        const item = parseMember(member.raw, userListItemSchema, path, problems);
        if (item && !problems.any && !stage.addUser(toStagedUser(item))) {
          problems.add({ path: formatPath([...path, 'email_id'], '$'), message: `duplicate email_id ${item.email_id}` });
        }
      } else if (member.kind === 'element' && member.section === 'guest_links') {
        const path = ['guest_links', member.index];
        const link = parseMember(member.raw, guestLinkSchema, path, problems);
        if (link && !problems.any && !stage.addLink(toStagedLink(link))) {
          problems.add({
            path: formatPath([...path, 'magic_link_id'], '$'),
            message: `duplicate magic_link_id ${link.magic_link_id}`,
          });
        }
      } else if (member.kind === 'entry') {
        const path = ['details', member.key];
        if (!/^[0-9]{1,15}$/.test(member.key)) {
          problems.add({ path: formatPath(path, '$'), message: 'expected an email_id as the key' });
          continue;
        }
        const detail = parseMember(member.raw, userDetailSchema, path, problems);
        if (detail && !problems.any && !stage.addDetail(toStagedDetail(Number(member.key), detail))) {
          problems.add({ path: formatPath(path, '$'), message: `a second entry for email_id ${Number(member.key)}` });
        }
      }
    }
  } catch (err) {
    if (!(err instanceof JsonSyntaxError)) throw err;
    problems.add({ path: '(file)', message: `not a valid snapshot: ${err.message}` });
  }
  if (!problems.any) {
    for (const section of ['users', 'details']) {
      if (!seen.has(section)) problems.add({ path: `$.${section}`, message: 'required' });
    }
    for (const id of stage.usersWithoutDetails(20)) {
      problems.add({ path: formatPath(['details', String(id)], '$'), message: `missing: user ${id} is listed in $.users` });
    }
    for (const id of stage.detailsWithoutUsers(20)) {
      problems.add({ path: formatPath(['details', String(id)], '$'), message: `no user with email_id ${id} in $.users` });
    }
  }
  if (problems.any) {
    const more = problems.total > problems.items.length ? ` (first ${problems.items.length} of ${problems.total} shown)` : '';
    throw new InputError(`snapshot ${file} was not imported, the cache is unchanged${more}`, problems.items);
  }
}
