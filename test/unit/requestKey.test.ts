import { describe, expect, it } from 'vitest';
import { BadRequest } from '../../src/service/params.js';
import { keyInBodyPrefix, oneKey } from '../../src/service/requestKey.js';

const key = (text: string, kind: 'json' | 'form', complete = false) => keyInBodyPrefix(Buffer.from(text), kind, complete)[0]?.key;

describe('api_key in the first bytes of a body', () => {
  it('a form: only fields that end within the bytes read, unless the body is whole; the last one wins', () => {
    expect(key('api_key=K1&emails=a', 'form')).toBe('K1');
    expect(key('emails=a&api_key=K1', 'form')).toBeUndefined(); // cut off: its value may go on
    expect(key('emails=a&api_key=K1', 'form', true)).toBe('K1');
    expect(key('api_key=K1&api_key=K2&x=1', 'form')).toBe('K2');
    expect(key('api%5Fkey=K%2B1&x', 'form')).toBe('K+1');
    expect(key('xapi_key=K1&', 'form')).toBeUndefined();
  });

  it('JSON: a string member of the top-level object whose value ends within the bytes read', () => {
    expect(key('{"api_key":"K1","emails":["a"', 'json')).toBe('K1');
    expect(key('{ "emails": ["x"], "api_key" : "K\\"1", "more": [', 'json')).toBe('K"1');
    expect(key('{"api_key":"K1', 'json')).toBeUndefined(); // the value is cut off
    expect(key('{"nested":{"api_key":"K1"},"x":[', 'json')).toBeUndefined();
    expect(key('[{"api_key":"K1"}]', 'json')).toBeUndefined();
    expect(key('{"name":"api_key","x":1', 'json')).toBeUndefined(); // a value, not a member name
    expect(key('{"name":"\\"api_key\\":\\"K1\\"","x":1', 'json')).toBeUndefined(); // inside a string
    expect(key('{"api_key":42,"x":1', 'json')).toBeUndefined();
  });
});

describe('keys in several places', () => {
  it('the same key anywhere is one key; two that differ are refused naming both places', () => {
    expect(oneKey([])).toBeUndefined();
    expect(
      oneKey([
        { place: 'the Authorization header', key: 'A' },
        { place: 'api_key in the body', key: 'A' },
      ]),
    ).toBe('A');
    const differ = () =>
      oneKey([
        { place: 'the Authorization header', key: 'A' },
        { place: 'api_key in the body', key: 'B' },
      ]);
    expect(differ).toThrow(BadRequest);
    expect(differ).toThrow('two API keys that differ, in the Authorization header and in api_key in the body: send one key, in one place');
  });
});
