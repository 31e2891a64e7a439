/** Percentile of a sorted array of numbers (nearest rank). */
export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export interface Timing {
  count: number;
  perSecond: number;
  p50Us: number;
  p99Us: number;
  meanUs: number;
}

/** Times `fn` once per input, each call on its own (hrtime around the call). */
export function timeEach<T>(inputs: readonly T[], fn: (input: T) => unknown): Timing {
  const samples = new Float64Array(inputs.length);
  const started = process.hrtime.bigint();
  for (let i = 0; i < inputs.length; i++) {
    const t0 = process.hrtime.bigint();
    fn(inputs[i]!);
    samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  const totalUs = Number(process.hrtime.bigint() - started) / 1000;
  samples.sort();
  return {
    count: inputs.length,
    perSecond: inputs.length / (totalUs / 1e6),
    p50Us: percentile(samples, 50),
    p99Us: percentile(samples, 99),
    meanUs: totalUs / inputs.length,
  };
}

export function maxRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}
