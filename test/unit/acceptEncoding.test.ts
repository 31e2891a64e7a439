import { describe, expect, it } from 'vitest';
import { negotiateEncoding } from '../../src/service/acceptEncoding.js';

// Issue 28 item 1: the coding GET /directory answers in, from Accept-Encoding read simply (q-values, *, x-gzip).
describe('negotiateEncoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip', 'gzip'],
    ['GZip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate', 'gzip'], // Node's fetch
    ['gzip, deflate, br', 'br'], // browsers: br on a tie
    ['deflate, gzip, br, zstd', 'br'], // curl --compressed
    ['gzip;q=1.0, br;q=0.5', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0', 'identity'],
    ['gzip;q=0, br;q=0', 'identity'],
    ['*', 'br'],
    ['*;q=0.1, gzip;q=0.5', 'gzip'],
    ['gzip;q=0, *', 'br'],
    ['*;q=0', 'identity'],
    ['identity', 'identity'],
    ['identity;q=0', 'identity'], // nothing else acceptable: identity all the same
    ['compress, zstd, deflate', 'identity'],
    ['gzip;q=2', 'identity'], // not a weight: not acceptable
    ['gzip;q=abc', 'identity'],
    ['gzip ; q=0.8 ; level=1', 'gzip'], // other parameters are not read
    [',,;;', 'identity'],
    [`${'a, '.repeat(400)}gzip`, 'identity'], // over 1024 characters: not read
  ] as const)('%j -> %s', (header, expected) => {
    expect(negotiateEncoding(header)).toBe(expected);
  });
});
