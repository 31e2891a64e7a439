import * as z from 'zod';

/**
 * The directory's wire formats, shared by the reference service and the agent (docs/sync.md, docs/mqtt.md):
 * - the version of the directory: `revision` (a counter), `history` (a random id the service renews whenever its
 *   history may have gone back: a database restored from a backup) and `tag` (a random tag per revision, so a
 *   revision number issued again after a restore of the whole data directory does not match the old one);
 * - the ETag of a GET /directory answer: `"dir-<revision>-<history>-<tag>"` (`"dir-<revision>"` from a service
 *   from before histories, still read);
 * - the query of an agent that holds a version: `since=<revision>&history=<history>&tag=<tag>`;
 * - the retained `P/directory/revision` message: `{"revision":N,"at":ISO,"history":"...","tag":"..."}` (without
 *   history and tag from a service from before histories: read as before).
 */

const HISTORY_PATTERN = /^[0-9a-f]{32}$/;
const TAG_PATTERN = /^[0-9a-f]{16}$/;

export const historySchema = z.string().regex(HISTORY_PATTERN, 'expected a history id (32 hex digits)');
export const tagSchema = z.string().regex(TAG_PATTERN, 'expected a revision tag (16 hex digits)');

/** Which directory a cache holds, or a service answers with. null history or tag: from before histories. */
export interface DirectoryVersion {
  revision: number;
  history: string | null;
  tag: string | null;
}

export function directoryEtag(version: DirectoryVersion): string {
  if (version.history === null) return `"dir-${version.revision}"`;
  return `"dir-${version.revision}-${version.history}${version.tag === null ? '' : `-${version.tag}`}"`;
}

const ETAG = /^(?:W\/)?"dir-(\d{1,15})(?:-([0-9a-f]{32})(?:-([0-9a-f]{16}))?)?"$/;

/** An ETag (or If-None-Match) value as a version; null when it is not one of ours. */
export function parseDirectoryEtag(value: string | undefined): DirectoryVersion | null {
  const match = ETAG.exec((value ?? '').trim());
  if (!match) return null;
  return { revision: Number(match[1]), history: match[2] ?? null, tag: match[3] ?? null };
}

/** The GET /directory query of a caller holding `held` (none: everything). */
export function directoryQuery(held: DirectoryVersion | null): Record<string, string> {
  if (held === null) return {};
  const query: Record<string, string> = { since: String(held.revision) };
  if (held.history !== null) query.history = held.history;
  if (held.tag !== null) query.tag = held.tag;
  return query;
}

export const revisionMessageSchema = z.object({
  revision: z.number().int().nonnegative(),
  at: z.string().max(64),
  history: historySchema.optional(),
  tag: tagSchema.optional(),
});
export type RevisionMessage = z.output<typeof revisionMessageSchema>;

export function revisionPayload(version: DirectoryVersion & { at: string }): string {
  const message: RevisionMessage = { revision: version.revision, at: version.at };
  if (version.history !== null) message.history = version.history;
  if (version.tag !== null) message.tag = version.tag;
  return JSON.stringify(message);
}

/** A `P/directory/revision` payload as a version with its time, or null when it is not one. */
export function parseRevisionMessage(payload: Buffer): (DirectoryVersion & { at: string }) | null {
  try {
    const result = revisionMessageSchema.safeParse(JSON.parse(payload.toString('utf8')));
    if (!result.success) return null;
    const { revision, at, history, tag } = result.data;
    return { revision, at, history: history ?? null, tag: tag ?? null };
  } catch {
    return null; // not JSON
  }
}
