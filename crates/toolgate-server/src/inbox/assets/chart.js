// The charts, drawn as inline SVG by the page itself (no library: each is a few dozen
// lines, and the page loads nothing from elsewhere): calls per tool, outcomes, calls over
// time, latency histogram with percentiles, and tokens per run.

import { svg, duration } from './dom.js';

// Calls per tool, outcomes with the success rate, and p50/p95 durations, as one SVG.
export function statsChart(s) {
  const W = 640;
  const tools = Object.entries(s.tool_usage).sort((a, b) => b[1] - a[1]);
  const max = Math.max(1, ...tools.map(([, n]) => n));
  const label = 150;
  const barW = W - label - 60;
  let y = 24;
  const parts = [svg('text', { x: 0, y: 14, class: 'chart-title', text: 'Calls per tool' })];
  for (const [name, n] of tools) {
    const w = Math.max(2, (n / max) * barW);
    parts.push(
      svg('text', { x: label - 8, y: y + 14, 'text-anchor': 'end', class: 'chart-label', text: name.length > 20 ? `${name.slice(0, 19)}…` : name }),
      svg('rect', { x: label, y, width: w, height: 20, rx: 3, class: 'bar tool' }),
      svg('text', { x: label + w + 6, y: y + 14, class: 'chart-value', text: String(n) }));
    y += 28;
  }
  y += 16;
  parts.push(svg('text', { x: 0, y, class: 'chart-title', text: `Outcomes: ${s.success_rate}% succeeded` }));
  y += 10;
  const outcomes = [
    ['succeeded', s.successful_calls], ['failed', s.failed_calls], ['denied', s.denied_calls],
    ['timeout', s.timeout_calls], ['cancelled', s.cancelled_calls], ['client', s.client_calls],
  ].filter(([, n]) => n > 0);
  const total = Math.max(1, s.total_calls);
  let x = 0;
  for (const [name, n] of outcomes) {
    const w = (n / total) * W;
    parts.push(svg('rect', { x, y, width: Math.max(1, w - 1), height: 22, class: `bar o-${name}` },
      svg('title', { text: `${name}: ${n}` })));
    x += w;
  }
  y += 40;
  x = 0;
  for (const [name, n] of outcomes) {
    parts.push(svg('rect', { x, y: y - 10, width: 10, height: 10, class: `bar o-${name}` }),
      svg('text', { x: x + 14, y, class: 'chart-label', text: `${name} ${n}` }));
    x += 110;
  }
  y += 26;
  parts.push(svg('text', { x: 0, y, class: 'chart-title', text: 'Duration (ms)' }));
  y += 10;
  const dmax = Math.max(1, s.duration_ms.p95, s.duration_ms.p50);
  for (const [name, v] of [['p50', s.duration_ms.p50], ['p95', s.duration_ms.p95]]) {
    const w = Math.max(2, (v / dmax) * barW);
    parts.push(
      svg('text', { x: label - 8, y: y + 14, 'text-anchor': 'end', class: 'chart-label', text: name }),
      svg('rect', { x: label, y, width: w, height: 20, rx: 3, class: `bar ${name}` }),
      svg('text', { x: label + w + 6, y: y + 14, class: 'chart-value', text: duration(v) }));
    y += 28;
  }
  const summary = `Calls per tool: ${tools.map(([t, n]) => `${t} ${n}`).join(', ')}. ${s.success_rate}% succeeded. Duration p50 ${duration(s.duration_ms.p50)}, p95 ${duration(s.duration_ms.p95)}.`;
  return svg('svg', { viewBox: `0 0 ${W} ${y + 4}`, class: 'chart', role: 'img', 'aria-label': summary }, parts);
}

// The outcomes counted over call records, in the order the charts draw them.
const OUTCOMES = ['succeeded', 'failed', 'denied', 'timeout', 'cancelled', 'client'];

// The p-th percentile (nearest rank) of sorted numbers.
export function percentile(sorted, p) {
  if (!sorted.length) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

// A time's label for a bucket `span` ms wide.
function tick(ms, span) {
  const d = new Date(ms);
  if (span >= 86400000) return d.toLocaleDateString();
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: span < 60000 ? '2-digit' : undefined });
}

// Calls over time: the records' start times in (at most) 24 buckets, each bar stacked
// by outcome, with a legend and a summary for screen readers.
export function overTimeChart(records, title = 'Calls over time') {
  const W = 640, H = 180, left = 36, top = 24, plotH = 120;
  const times = records.map((r) => r.started_at).filter((t) => typeof t === 'number');
  if (!times.length) return null;
  const from = Math.min(...times), to = Math.max(...times);
  const n = to === from ? 1 : 24;
  const span = Math.max(1000, Math.ceil((to - from + 1) / n));
  const buckets = Array.from({ length: n }, () => Object.fromEntries(OUTCOMES.map((o) => [o, 0])));
  for (const r of records) {
    const i = Math.min(n - 1, Math.floor((r.started_at - from) / span));
    if (buckets[i][r.status] !== undefined) buckets[i][r.status] += 1;
  }
  const totals = buckets.map((b) => OUTCOMES.reduce((s, o) => s + b[o], 0));
  const max = Math.max(1, ...totals);
  const barW = (W - left - 8) / n;
  const parts = [svg('text', { x: 0, y: 14, class: 'chart-title', text: `${title} (${records.length} calls)` }),
    svg('text', { x: left - 6, y: top + 10, 'text-anchor': 'end', class: 'chart-value', text: String(max) }),
    svg('line', { x1: left, y1: top + plotH, x2: W - 8, y2: top + plotH, class: 'axis' })];
  buckets.forEach((b, i) => {
    let y = top + plotH;
    for (const o of OUTCOMES) {
      if (!b[o]) continue;
      const hgt = (b[o] / max) * plotH;
      y -= hgt;
      parts.push(svg('rect', { x: left + i * barW + 1, y, width: Math.max(1, barW - 2), height: hgt, class: `bar o-${o}` },
        svg('title', { text: `${tick(from + i * span, span)}: ${o} ${b[o]}` })));
    }
  });
  parts.push(svg('text', { x: left, y: top + plotH + 16, class: 'chart-label', text: tick(from, span) }),
    svg('text', { x: W - 8, y: top + plotH + 16, 'text-anchor': 'end', class: 'chart-label', text: tick(from + n * span, span) }));
  let x = left;
  for (const o of OUTCOMES.filter((o) => buckets.some((b) => b[o]))) {
    parts.push(svg('rect', { x, y: H - 6, width: 10, height: 10, class: `bar o-${o}` }),
      svg('text', { x: x + 14, y: H + 3, class: 'chart-label', text: o }));
    x += 100;
  }
  const busiest = totals.indexOf(max);
  const summary = `${title}: ${records.length} calls from ${new Date(from).toLocaleString()} to ${new Date(to).toLocaleString()}, at most ${max} in one interval (from ${tick(from + busiest * span, span)}).`;
  return svg('svg', { viewBox: `0 0 ${W} ${H + 8}`, class: 'chart', role: 'img', 'aria-label': summary }, parts);
}

// The bounds (ms) of the latency histogram's buckets: 1-2-5 steps.
const BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000];

// Latency: how many calls took how long (1-2-5 buckets), with p50, p95 and p99.
export function latencyChart(records) {
  const ms = records.map((r) => r.duration_ms).filter((d) => typeof d === 'number').sort((a, b) => a - b);
  if (!ms.length) return null;
  const counts = new Array(BOUNDS.length + 1).fill(0);
  for (const d of ms) {
    const i = BOUNDS.findIndex((b) => d < b);
    counts[i < 0 ? BOUNDS.length : i] += 1;
  }
  const first = counts.findIndex((c) => c > 0);
  const last = counts.length - 1 - [...counts].reverse().findIndex((c) => c > 0);
  const shown = counts.slice(first, last + 1);
  const label = (i) => {
    const lo = i === 0 ? 0 : BOUNDS[i - 1];
    return i >= BOUNDS.length ? `≥ ${duration(lo)}` : `< ${duration(BOUNDS[i])}`;
  };
  const W = 640, left = 90, barW = W - left - 60;
  const max = Math.max(1, ...shown);
  const [p50, p95, p99] = [50, 95, 99].map((p) => percentile(ms, p));
  const parts = [svg('text', { x: 0, y: 14, class: 'chart-title', text: `Latency: p50 ${duration(p50)} · p95 ${duration(p95)} · p99 ${duration(p99)}` })];
  let y = 26;
  shown.forEach((c, k) => {
    const w = c ? Math.max(2, (c / max) * barW) : 0;
    parts.push(svg('text', { x: left - 8, y: y + 13, 'text-anchor': 'end', class: 'chart-label', text: label(first + k) }),
      svg('rect', { x: left, y, width: w, height: 18, rx: 2, class: 'bar p50' }),
      svg('text', { x: left + w + 6, y: y + 13, class: 'chart-value', text: String(c) }));
    y += 24;
  });
  const summary = `Latency of ${ms.length} calls: p50 ${duration(p50)}, p95 ${duration(p95)}, p99 ${duration(p99)}; ${shown.map((c, k) => `${label(first + k)}: ${c}`).join(', ')}.`;
  return svg('svg', { viewBox: `0 0 ${W} ${y + 4}`, class: 'chart', role: 'img', 'aria-label': summary }, parts);
}

// Success, failure and denial rates of a summary's counters, as one 100% bar.
export function ratesChart(s) {
  const W = 640;
  const outcomes = [
    ['succeeded', s.successful_calls], ['failed', s.failed_calls], ['denied', s.denied_calls],
    ['timeout', s.timeout_calls], ['cancelled', s.cancelled_calls], ['client', s.client_calls],
  ].filter(([, n]) => n > 0);
  const total = Math.max(1, s.total_calls);
  const pct = (n) => `${((100 * n) / total).toFixed(1)}%`;
  const parts = [svg('text', { x: 0, y: 14, class: 'chart-title', text: `Outcomes of ${s.total_calls} calls` })];
  let x = 0;
  for (const [name, n] of outcomes) {
    const w = (n / total) * W;
    parts.push(svg('rect', { x, y: 24, width: Math.max(1, w - 1), height: 22, class: `bar o-${name}` }, svg('title', { text: `${name}: ${n} (${pct(n)})` })));
    x += w;
  }
  x = 0;
  for (const [name, n] of outcomes) {
    parts.push(svg('rect', { x, y: 56, width: 10, height: 10, class: `bar o-${name}` }),
      svg('text', { x: x + 14, y: 65, class: 'chart-label', text: `${name} ${pct(n)}` }));
    x += 125;
  }
  const summary = `Outcomes: ${outcomes.map(([name, n]) => `${name} ${n} (${pct(n)})`).join(', ')}.`;
  return svg('svg', { viewBox: `0 0 ${W} 72`, class: 'chart', role: 'img', 'aria-label': summary }, parts);
}

// Tokens per run, prompt and completion stacked, newest last.
export function tokensChart(runs) {
  const used = runs.filter((r) => r.usage && r.usage.total_tokens > 0).slice(0, 30).reverse();
  if (!used.length) return null;
  const W = 640, left = 150, barW = W - left - 90;
  const max = Math.max(1, ...used.map((r) => r.usage.total_tokens));
  const parts = [svg('text', { x: 0, y: 14, class: 'chart-title', text: 'Tokens per run (prompt, completion)' })];
  let y = 26;
  for (const r of used) {
    const pw = (r.usage.prompt_tokens / max) * barW;
    const cw = (r.usage.completion_tokens / max) * barW;
    parts.push(svg('text', { x: left - 8, y: y + 13, 'text-anchor': 'end', class: 'chart-label', text: `${r.agent} ${r.id.slice(4, 10)}` }),
      svg('rect', { x: left, y, width: Math.max(1, pw), height: 18, class: 'bar p95' }, svg('title', { text: `prompt ${r.usage.prompt_tokens}` })),
      svg('rect', { x: left + pw, y, width: Math.max(1, cw), height: 18, class: 'bar p50' }, svg('title', { text: `completion ${r.usage.completion_tokens}` })),
      svg('text', { x: left + pw + cw + 6, y: y + 13, class: 'chart-value', text: String(r.usage.total_tokens) }));
    y += 24;
  }
  const summary = `Tokens per run: ${used.map((r) => `${r.id} ${r.usage.total_tokens}`).join(', ')}.`;
  return svg('svg', { viewBox: `0 0 ${W} ${y + 4}`, class: 'chart', role: 'img', 'aria-label': summary }, parts);
}
