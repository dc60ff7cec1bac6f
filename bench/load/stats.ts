// Samples kept in one growable Float64Array (no per-sample objects: a K=5,000 run records ~750k
// latencies) and nearest-rank percentiles over them.

export class Samples {
  private buf = new Float64Array(1 << 16);
  n = 0;

  push(v: number): void {
    if (this.n === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n++] = v;
  }

  /** p in [0, 1]; null when empty. Sorts once, lazily. */
  quantiles(ps: number[]): (number | null)[] {
    if (this.n === 0) return ps.map(() => null);
    const sorted = this.buf.subarray(0, this.n).sort();
    return ps.map((p) => sorted[Math.min(this.n - 1, Math.max(0, Math.ceil(p * this.n) - 1))]!);
  }
}

export interface Summary {
  n: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
}

export function summarize(s: Samples): Summary {
  const [p50, p90, p99, max] = s.quantiles([0.5, 0.9, 0.99, 1]);
  return { n: s.n, p50: round(p50), p90: round(p90), p99: round(p99), max: round(max) };
}

/** The middle of `values` (the mean of the middle two for an even count); null when there are none. */
export function middle(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export const round = (v: number | null | undefined, digits = 2): number | null =>
  v === null || v === undefined || !Number.isFinite(v) ? null : Number(v.toFixed(digits));
