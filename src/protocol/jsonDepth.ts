/**
 * Signed messages are canonicalized (signing.ts) by recursion: a message nested thousands deep would overflow
 * the stack there. Every signed or retained message is measured first, without recursion, and refused when it
 * is nested deeper than this: the deepest real message (a guest link's time_mapping) is 4 levels.
 */
export const MAX_JSON_DEPTH = 32;

/** Whether `value` (parsed JSON) nests arrays and objects more than `limit` levels deep; iterative. */
export function deeperThan(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}
