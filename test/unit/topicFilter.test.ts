import { describe, expect, it } from 'vitest';
import { topicMatches } from '../../src/mqtt/topicFilter.js';

describe('topicMatches (MQTT topic filters)', () => {
  it('an exact filter matches only its topic', () => {
    expect(topicMatches('da/holidays', 'da/holidays')).toBe(true);
    expect(topicMatches('da/holidays', 'da/holidays/x')).toBe(false);
    expect(topicMatches('da/holidays', 'da/holiday')).toBe(false);
    expect(topicMatches('da/agents/a/lockdown', 'da/agents/a/lockdown/state')).toBe(false);
  });

  it('+ matches exactly one level, an empty one included', () => {
    expect(topicMatches('da/guest-links/+', 'da/guest-links/41')).toBe(true);
    expect(topicMatches('da/guest-links/+', 'da/guest-links/')).toBe(true);
    expect(topicMatches('da/guest-links/+', 'da/guest-links')).toBe(false);
    expect(topicMatches('da/guest-links/+', 'da/guest-links/41/x')).toBe(false);
    expect(topicMatches('da/guest-links/+', 'da/guest-link-index')).toBe(false);
    expect(topicMatches('da/doors/+/set', 'da/doors/6f1c/set')).toBe(true);
    expect(topicMatches('da/doors/+/set', 'da/doors/6f1c/reply')).toBe(false);
    expect(topicMatches('+/+', 'a/b')).toBe(true);
    expect(topicMatches('+', '/')).toBe(false);
  });

  it('# matches the parent level and everything below it, and only as the last level', () => {
    expect(topicMatches('da/#', 'da')).toBe(true);
    expect(topicMatches('da/#', 'da/doors/6f1c/set')).toBe(true);
    expect(topicMatches('da/#', 'db/doors')).toBe(false);
    expect(topicMatches('#', 'da/doors/6f1c/set')).toBe(true);
    expect(topicMatches('da/+/#', 'da/doors')).toBe(true);
    expect(topicMatches('da/#/set', 'da/doors/set')).toBe(false);
  });

  it('a leading wildcard does not match a $ topic', () => {
    expect(topicMatches('#', '$SYS/broker/uptime')).toBe(false);
    expect(topicMatches('+/broker/uptime', '$SYS/broker/uptime')).toBe(false);
    expect(topicMatches('$SYS/#', '$SYS/broker/uptime')).toBe(true);
  });
});
