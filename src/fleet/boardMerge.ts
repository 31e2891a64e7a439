/**
 * The configuration an agent of the fleet runs (docs/fleet.md, "Configuration from the service"): the service's
 * document merged UNDER the board's own file. Every key the board file sets wins, at any depth; a section both set
 * is merged key by key; a list (doors, levels, readers) is replaced whole, never merged item by item. Pure: plain
 * data in, plain data out, the inputs left unchanged.
 */
export function mergeUnderBoard(document: unknown, board: unknown): unknown {
  if (!isSection(document) || !isSection(board)) return board === undefined ? document : board;
  const merged: Record<string, unknown> = {};
  for (const key of Object.keys(document)) {
    if (!Object.hasOwn(board, key)) setOwn(merged, key, document[key]);
  }
  for (const key of Object.keys(board)) {
    setOwn(merged, key, Object.hasOwn(document, key) ? mergeUnderBoard(document[key], board[key]) : board[key]);
  }
  return merged;
}

/** A YAML mapping as parsed: an object, not a list. */
function isSection(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An own property, also for a key such as `__proto__` (never the object's prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
