/** `1 guest link`, `2 guest links`: a count with its noun in agreement. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/** `1,000`: digits grouped by thousands, without Intl (its first use costs a CLI start ~20 ms of ICU loading). */
export function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
