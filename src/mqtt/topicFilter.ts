/**
 * MQTT topic filters (MQTT 5, 4.7): `+` matches exactly one level, `#` (last, a level of its own) the parent
 * level and any number of levels below it. A filter or topic starting with `$` (broker topics, `$SYS/...`) is
 * not matched by a leading wildcard.
 */
export function topicMatches(filter: string, topic: string): boolean {
  if (filter === topic) return true;
  const f = filter.split('/');
  const t = topic.split('/');
  if (t[0]?.startsWith('$') && (f[0] === '+' || f[0] === '#')) return false;
  for (let i = 0; i < f.length; i++) {
    const level = f[i]!;
    if (level === '#') return i === f.length - 1;
    if (i >= t.length) return false;
    if (level !== '+' && level !== t[i]) return false;
  }
  return f.length === t.length;
}
