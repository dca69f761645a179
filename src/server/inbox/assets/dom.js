// The inbox's building blocks: elements (HTML and SVG), times and durations, status
// badges, notices, and JSON shown pretty-printed with long values folded and secrets
// marked.

const FOLD_CHARS = 160;
const FOLD_LINES = 6;
const FOLD_ITEMS = 20;
const notices = document.getElementById('notices');
const live = document.getElementById('live');

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) if (c) el.append(c);
  return el;
}

export const enc = encodeURIComponent;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function when(ms) {
  return ms ? new Date(ms).toLocaleString() : '';
}

export function since(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs} h ${m % 60} min`;
  return `${Math.floor(hrs / 24)} days`;
}

export function duration(ms) {
  if (ms === undefined || ms === null) return '';
  return ms < 1000 ? `${ms.toFixed(ms < 10 ? 1 : 0)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function badge(status) {
  return h('span', { class: `badge s-${status}` }, status.replaceAll('_', ' '));
}

export function notice(text, kind = 'warn') {
  while (notices.children.length >= 5) notices.firstChild.remove();
  const n = h('div', { class: `notice ${kind}` },
    h('span', {}, text),
    h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', onclick: () => n.remove() }, '×'));
  notices.append(n);
}

export function setLive(on, text) {
  live.textContent = text || (on ? 'Live' : 'Reconnecting…');
  live.classList.toggle('on', on);
}

export function foldedText(text, cls) {
  const lines = text.split('\n');
  if (text.length <= FOLD_CHARS && lines.length <= FOLD_LINES) return null;
  const preview = lines[0].slice(0, 80);
  return h('details', { class: `fold ${cls || ''}` },
    h('summary', {}, h('span', { class: 'preview' }, preview), ` … (${text.length.toLocaleString()} characters, ${lines.length} lines)`),
    h('pre', {}, text));
}

export function jsonView(v) {
  if (v === '[secret]') return h('span', { class: 'secret', title: 'A secret value: never shown' }, '[secret]');
  if (typeof v === 'string') {
    return foldedText(v, 'str') || h('span', { class: 'str' }, JSON.stringify(v));
  }
  if (v === null || typeof v !== 'object') return h('span', { class: 'lit' }, JSON.stringify(v));
  if (Array.isArray(v)) {
    if (!v.length) return h('span', { class: 'lit' }, '[]');
    const list = h('ol', { class: 'arr', start: 0 }, v.map((x) => h('li', {}, jsonView(x))));
    if (v.length <= FOLD_ITEMS) return list;
    return h('details', { class: 'fold' }, h('summary', {}, `${v.length} items`), list);
  }
  const entries = Object.entries(v);
  if (!entries.length) return h('span', { class: 'lit' }, '{}');
  return h('dl', { class: 'obj' }, entries.map(([k, x]) => [h('dt', {}, k), h('dd', {}, jsonView(x))]));
}

export function textBlock(text) {
  return foldedText(text) || h('pre', { class: 'text' }, text);
}
