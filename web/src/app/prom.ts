// A reader of the Prometheus text format (0.0.4) that GET /metrics answers:
// samples "name{label="value",...} number", comments and blank lines
// skipped.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseProm(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    out.push({ name: m[1], labels, value });
  }
  return out;
}

/** Samples of one metric, optionally with some labels fixed. */
export function pick(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** Sum of every sample of name (0 when none). */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return pick(samples, name, labels).reduce((a, s) => a + s.value, 0);
}

export interface Bucket {
  le: number; // upper bound, seconds (Infinity for +Inf)
  count: number; // observations in this bucket alone (not cumulative)
}

/** A histogram's buckets (non-cumulative), its count and sum. */
export function histogram(samples: Sample[], name: string): { buckets: Bucket[]; count: number; sum: number } {
  const cum = pick(samples, `${name}_bucket`)
    .map((s) => ({ le: s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), n: s.value }))
    .sort((a, b) => a.le - b.le);
  const buckets = cum.map((b, i) => ({ le: b.le, count: b.n - (i ? cum[i - 1].n : 0) }));
  return { buckets, count: total(samples, `${name}_count`), sum: total(samples, `${name}_sum`) };
}

/** The q-quantile (0..1) estimated from buckets as Prometheus does
 * (linear within the bucket); NaN without observations. */
export function quantile(buckets: Bucket[], q: number): number {
  const n = buckets.reduce((a, b) => a + b.count, 0);
  if (!n) return NaN;
  const rank = q * n;
  let seen = 0;
  let lower = 0;
  for (const b of buckets) {
    if (seen + b.count >= rank && b.count > 0) {
      if (b.le === Infinity) return lower;
      return lower + ((b.le - lower) * (rank - seen)) / b.count;
    }
    seen += b.count;
    if (b.le !== Infinity) lower = b.le;
  }
  return lower;
}
