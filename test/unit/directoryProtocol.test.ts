import { describe, expect, it } from 'vitest';
import { directoryEtag, directoryQuery, parseDirectoryEtag, parseRevisionMessage, revisionPayload } from '../../src/protocol/directory.js';

const H = '0123456789abcdef0123456789abcdef';
const T = 'fedcba9876543210';

describe('the directory wire formats (protocol/directory.ts, shared by the service and the agent)', () => {
  it('the ETag names revision, history and tag, and reads back; the old "dir-N" is still read', () => {
    const version = { revision: 42, history: H, tag: T };
    expect(directoryEtag(version)).toBe(`"dir-42-${H}-${T}"`);
    expect(parseDirectoryEtag(directoryEtag(version))).toEqual(version);
    expect(parseDirectoryEtag('"dir-7"')).toEqual({ revision: 7, history: null, tag: null });
    expect(directoryEtag({ revision: 7, history: null, tag: null })).toBe('"dir-7"');
    expect(parseDirectoryEtag(`W/"dir-3-${H}"`)).toEqual({ revision: 3, history: H, tag: null });
    for (const bad of [undefined, '', 'dir-7', '"dir-x"', `"dir-1-${H.toUpperCase()}"`, `"dir-1-${H}-zz"`])
      expect(parseDirectoryEtag(bad), String(bad)).toBeNull();
  });

  it('the query of a door holding a version names its history and tag; an old cache sends since alone', () => {
    expect(directoryQuery(null)).toEqual({});
    expect(directoryQuery({ revision: 5, history: null, tag: null })).toEqual({ since: '5' });
    expect(directoryQuery({ revision: 5, history: H, tag: T })).toEqual({ since: '5', history: H, tag: T });
  });

  it('the revision message carries history and tag; one without them (an old service) is read as before', () => {
    const payload = revisionPayload({ revision: 9, at: '2026-11-24T09:00:00.000Z', history: H, tag: T });
    expect(JSON.parse(payload)).toEqual({ revision: 9, at: '2026-11-24T09:00:00.000Z', history: H, tag: T });
    expect(parseRevisionMessage(Buffer.from(payload))).toEqual({ revision: 9, at: '2026-11-24T09:00:00.000Z', history: H, tag: T });
    expect(parseRevisionMessage(Buffer.from('{"revision":9,"at":"x"}'))).toEqual({ revision: 9, at: 'x', history: null, tag: null });
    for (const bad of ['{"revision":9,"at":"x","history":"short"}', '{"revision":9,"at":"x","tag":5}', 'nope', ''])
      expect(parseRevisionMessage(Buffer.from(bad)), bad).toBeNull();
  });
});
