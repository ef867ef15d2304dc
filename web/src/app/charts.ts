// Small SVG charts built with DOM calls (no library, no markup strings).
// Each has a <title> and an aria-label that say its numbers in words.

import { svg } from './dom';

export interface Bar {
  label: string;
  value: number;
  tone?: string; // a CSS class suffix: ok, warn, bad
}

const W = 320;

/** Horizontal bars, one per row, with the value at the end. */
export function barChart(bars: Bar[], summary: string): SVGSVGElement {
  const row = 26;
  const labelW = 90;
  const H = Math.max(1, bars.length) * row + 4;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': summary }, svg('title', {}, summary));
  bars.forEach((b, i) => {
    const y = i * row + 4;
    const w = Math.max(b.value > 0 ? 2 : 0, ((W - labelW - 50) * b.value) / max);
    root.append(
      svg('text', { x: 0, y: y + 15, class: 'chart-label' }, b.label),
      svg('rect', { x: labelW, y, width: w.toFixed(1), height: row - 8, rx: 3, class: `bar bar-${b.tone ?? 'ok'}` }),
      svg('text', { x: labelW + w + 6, y: y + 15, class: 'chart-value' }, String(b.value)),
    );
  });
  return root;
}

export interface Point {
  t: number; // ms
  v: number;
}

/** A line over time (x: the last spanMs up to now), y from 0. */
export function lineChart(points: Point[], spanMs: number, unit: string, summary: string): SVGSVGElement {
  const H = 110;
  const padL = 34;
  const padB = 18;
  const now = Date.now();
  const max = Math.max(1, ...points.map((p) => p.v));
  const x = (t: number) => padL + ((W - padL - 4) * (t - (now - spanMs))) / spanMs;
  const y = (v: number) => 4 + (H - padB - 8) * (1 - v / max);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': summary }, svg('title', {}, summary));
  root.append(
    svg('line', { x1: padL, y1: y(0), x2: W - 4, y2: y(0), class: 'axis' }),
    svg('line', { x1: padL, y1: y(max), x2: W - 4, y2: y(max), class: 'grid' }),
    svg('text', { x: padL - 4, y: y(max) + 4, class: 'chart-tick', 'text-anchor': 'end' }, fmt(max)),
    svg('text', { x: padL - 4, y: y(0) + 4, class: 'chart-tick', 'text-anchor': 'end' }, '0'),
    svg('text', { x: padL, y: H - 2, class: 'chart-tick' }, `-${Math.round(spanMs / 60000)} min`),
    svg('text', { x: W - 4, y: H - 2, class: 'chart-tick', 'text-anchor': 'end' }, `now (${unit})`),
  );
  const shown = points.filter((p) => p.t >= now - spanMs);
  if (shown.length > 1)
    root.append(svg('polyline', { points: shown.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' '), class: 'line' }));
  for (const p of shown.slice(-1)) root.append(svg('circle', { cx: x(p.t).toFixed(1), cy: y(p.v).toFixed(1), r: 3, class: 'dot' }));
  return root;
}

/** Vertical bars over labelled bins (a histogram). */
export function columnChart(bins: Bar[], summary: string): SVGSVGElement {
  const H = 120;
  const padB = 30;
  const n = Math.max(1, bins.length);
  const colW = (W - 8) / n;
  const max = Math.max(1, ...bins.map((b) => b.value));
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': summary }, svg('title', {}, summary));
  // at most about 6 labels fit under the bars
  const every = Math.ceil(n / 6);
  bins.forEach((b, i) => {
    const hgt = ((H - padB - 14) * b.value) / max;
    const x0 = 4 + i * colW;
    root.append(svg('rect', { x: (x0 + 1).toFixed(1), y: (H - padB - hgt).toFixed(1), width: Math.max(1, colW - 2).toFixed(1), height: hgt.toFixed(1), class: `bar bar-${b.tone ?? 'ok'}` }));
    if (i % every === 0 || i === n - 1)
      root.append(svg('text', { x: (x0 + colW / 2).toFixed(1), y: H - padB + 12, class: 'chart-tick', 'text-anchor': 'middle' }, b.label));
    if (b.value) root.append(svg('text', { x: (x0 + colW / 2).toFixed(1), y: (H - padB - hgt - 3).toFixed(1), class: 'chart-tick', 'text-anchor': 'middle' }, String(b.value)));
  });
  return root;
}

function fmt(v: number): string {
  return v >= 100 ? String(Math.round(v)) : v >= 10 ? v.toFixed(1) : v.toFixed(2).replace(/\.?0+$/, '');
}
