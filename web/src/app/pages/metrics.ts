// Metrics at a glance (admin keys): sandboxes by state, creates per minute
// and create latency, read from GET /metrics every 5 s and drawn as small
// SVG charts.  Creates per minute are the change of the creates counter
// between two reads, kept for the last 30 minutes while the page is open.

import { api } from '../api';
import { barChart, columnChart, lineChart, Point } from '../charts';
import { h, replace } from '../dom';
import { Page } from '../page';
import { histogram, parseProm, pick, quantile, total } from '../prom';
import { role } from '../session';
import { errorBox, loading, poll } from '../ui';

const POLL_MS = 5000;
const SPAN_MS = 30 * 60 * 1000;

/** Kept across visits of the page within this tab. */
const history: { t: number; creates: number }[] = [];

function ms(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—';
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(2)} s`;
}

function card(title: string, figure: string, chart: Element, note?: string): HTMLElement {
  return h('section', { class: 'card metric' },
    h('h2', null, title),
    h('p', { class: 'figure' }, figure),
    chart,
    note ? h('p', { class: 'muted' }, note) : null);
}

export function metricsPage(): Page {
  const area = h('div', { class: 'metrics-grid' }, loading('Reading /metrics…'));
  const updated = h('p', { class: 'muted updated' });
  if (role() !== 'admin') {
    return {
      el: h('main', null, h('h1', { tabIndex: -1 }, 'Metrics'),
        h('p', { class: 'error', attrs: { role: 'alert' } }, 'The metrics need an admin key (GET /metrics answers 403 to team keys).')),
    };
  }
  const poller = poll(POLL_MS, async () => {
    let text: string;
    try {
      text = await api.metrics();
    } catch (e) {
      replace(area, errorBox(e, 'Could not read /metrics'));
      return;
    }
    const s = parseProm(text);
    const now = Date.now();
    history.push({ t: now, creates: total(s, 'pandastack_sandbox_creates_total') });
    while (history.length && history[0].t < now - SPAN_MS - POLL_MS) history.shift();

    const states = pick(s, 'pandastack_sandboxes').map((x) => ({
      label: x.labels.status ?? '?',
      value: x.value,
      tone: x.labels.status === 'error' ? 'bad' : x.labels.status === 'running' ? 'ok' : 'idle',
    }));
    const running = states.find((b) => b.label === 'running')?.value ?? 0;

    const rate: Point[] = [];
    for (let i = 1; i < history.length; i++) {
      const a = history[i - 1];
      const b = history[i];
      const d = b.creates - a.creates;
      // a counter that went down means the daemon restarted
      if (b.t > a.t) rate.push({ t: b.t, v: (Math.max(0, d) * 60000) / (b.t - a.t) });
    }
    const lastRate = rate.length ? rate[rate.length - 1].v : NaN;
    const okTotal = total(s, 'pandastack_sandbox_creates_total', { result: 'ok' });
    const errTotal = total(s, 'pandastack_sandbox_creates_total', { result: 'error' });

    const hist = histogram(s, 'pandastack_sandbox_create_duration_seconds');
    const p50 = quantile(hist.buckets, 0.5);
    const p95 = quantile(hist.buckets, 0.95);
    const mean = hist.count ? hist.sum / hist.count : NaN;
    const bins = hist.buckets.map((b) => ({ label: b.le === Infinity ? '∞' : b.le < 1 ? `${Math.round(b.le * 1000)}ms` : `${b.le}s`, value: b.count }));

    replace(area,
      card('Sandboxes by state', `${running} running`,
        barChart(states, states.map((b) => `${b.value} ${b.label}`).join(', ') || 'no sandboxes')),
      card('Creates per minute', Number.isFinite(lastRate) ? `${lastRate.toFixed(1)} / min` : 'measuring…',
        lineChart(rate, SPAN_MS, 'creates/min', `creates per minute over the last 30 minutes; now ${Number.isFinite(lastRate) ? lastRate.toFixed(1) : 'unknown'}`),
        `${okTotal} created, ${errTotal} failed since the daemon started. Measured while this page is open.`),
      card('Create latency', `p50 ${ms(p50)} · p95 ${ms(p95)}`,
        columnChart(bins, `create latency histogram of ${hist.count} creates: median ${ms(p50)}, 95th percentile ${ms(p95)}`),
        `${hist.count} ${hist.count === 1 ? 'create' : 'creates'}, mean ${ms(mean)}; the percentiles are estimated from the histogram's buckets.`));
    updated.textContent = `updated ${new Date(now).toLocaleTimeString()}`;
  });
  return {
    el: h('main', null, h('h1', { tabIndex: -1 }, 'Metrics'), updated, area,
      h('p', { class: 'muted' }, 'Read from GET /metrics (Prometheus text) every 5 s.')),
    stop: () => poller.stop(),
  };
}
