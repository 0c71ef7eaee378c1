/**
 * The value at quantile q (0..1) of the samples, linear interpolation; NaN without samples. The
 * same value as bench/lib.ts's `quantile` for finite samples, sorted as a Float64Array instead: the
 * load computes one fan-out side's figures while another side's deliveries may still arrive, and
 * the typed sort of up to 200,000 latencies takes the least CPU from their timing.
 */
export function quantile(samples: number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}
