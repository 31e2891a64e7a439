/** `1 guest link`, `2 guest links`: a count with its noun in agreement. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
