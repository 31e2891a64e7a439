import { directoryEtag, type DirectoryVersion } from '../protocol/directory.js';

/**
 * Whether a GET /directory answer's ETag names another version than its body (or, for a 304, than the version
 * held): a service's stored answer out of step with its revision, or a cache between door and service that mixed
 * them up. Such a delta is never applied (its base is in doubt): the agent asks for everything instead. Only a
 * directory ETag (`"dir-..."`) is compared, and only in what both sides name (an ETag or a body from before
 * histories names the revision alone). Null when they agree (or there is no ETag to compare), else why not.
 */
export function etagContradiction(etag: DirectoryVersion | null, version: DirectoryVersion): string | null {
  if (etag === null) return null;
  const differs =
    etag.revision !== version.revision ||
    (etag.history !== null && version.history !== null && etag.history !== version.history) ||
    (etag.tag !== null && version.tag !== null && etag.tag !== version.tag);
  return differs ? `the answer's ETag ${directoryEtag(etag)} does not match ${directoryEtag(version)}` : null;
}
