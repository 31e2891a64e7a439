/** `{ ...A, ...B }` as TypeScript types it: B's properties replace A's (each member of a union A alike). */
export type WithProps<A, B> = A extends unknown ? Omit<A, keyof B> & B : never;

/**
 * A copy of `base` with `extra`'s properties added, as `{ ...base, ...extra }` (later wins), for objects whose keys
 * are the program's own (a key `__proto__` would be set, not copied).
 *
 * Why not the literal: on Node 20 (V8 11.3) an object literal that starts with a spread of a non-empty object and goes
 * on with more properties (`{ ...state, failures }`, `{ ...a, ...b }`) builds a new hidden class each time it runs,
 * since V8 does not record transitions from the copy a leading spread makes: about 1.7 µs instead of 0.1 µs hot,
 * two runtime calls and a class left for the collector, every tap, event and message. `npm run lint:spreads` keeps
 * the daemon's runtime modules free of it (docs/architecture.md, "The tap path runs as optimized code").
 */
export function withProps<A extends object, B extends object>(base: A, extra: B): WithProps<A, B> {
  return Object.assign({}, base, extra) as unknown as WithProps<A, B>;
}

/** The keys whose value is not undefined (so that defaults, or the values kept, fill the others). */
export function definedOnly<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}
