// The conversation's chart, drawn as inline SVG: calls per tool, outcomes with the
// success rate, and p50/p95 durations.

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
