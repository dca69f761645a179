// The inbox's building blocks: elements (HTML and SVG) whose text shows hidden
// characters escaped, times and durations, status badges, notices, and JSON shown
// pretty-printed with long values folded and secrets marked.

const FOLD_CHARS = 160;
const FOLD_LINES = 6;
const FOLD_ITEMS = 20;
const notices = document.getElementById('notices');
const live = document.getElementById('live');

// Characters that hide text or change its order on screen: the bidirectional controls
// (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), the zero-width ones
// (U+200B-U+200D, U+2060, U+FEFF) and every other control or format character (Cc,
// Cf) but \n and \t; line and paragraph separators, lone surrogates and the blank
// Hangul fillers too. A path `invoice\u202egnp.exe` reads "invoiceexe.png" unescaped.
const HIDDEN = /(?![\n\t])[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029\u115f\u1160\u3164\uffa0]/u;
const HIDDEN_ALL = new RegExp(HIDDEN.source, 'gu');
const NAMES = {
  0x061c: 'arabic letter mark', 0x200b: 'zero width space', 0x200c: 'zero width non-joiner',
  0x200d: 'zero width joiner', 0x200e: 'left-to-right mark', 0x200f: 'right-to-left mark',
  0x202a: 'left-to-right embedding', 0x202b: 'right-to-left embedding', 0x202c: 'pop directional formatting',
  0x202d: 'left-to-right override', 0x202e: 'right-to-left override', 0x2060: 'word joiner',
  0x2066: 'left-to-right isolate', 0x2067: 'right-to-left isolate', 0x2068: 'first strong isolate',
  0x2069: 'pop directional isolate', 0xfeff: 'zero width no-break space',
};

// One hidden character as its escape: \u202e (\u{e0041} beyond U+FFFF).
function escapeOne(c) {
  const n = c.codePointAt(0);
  const hex = n.toString(16).padStart(4, '0');
  return n > 0xffff ? `\\u{${hex}}` : `\\u${hex}`;
}

// Whether text (or any key or string in a JSON value) holds a hidden character.
export function hasHidden(v) {
  if (typeof v === 'string') return HIDDEN.test(v);
  if (Array.isArray(v)) return v.some(hasHidden);
  if (v && typeof v === 'object') return Object.entries(v).some(([k, x]) => HIDDEN.test(k) || hasHidden(x));
  return false;
}

// Text with its hidden characters escaped, for attributes and titles.
export function escapeHidden(text) {
  return String(text).replace(HIDDEN_ALL, escapeOne);
}

// JSON for a person to edit: hidden characters as JSON escapes (they are only ever in
// strings there), so the text reads as it is and parses back to the same value.
export function editableJson(v) {
  const unit = (c, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return JSON.stringify(v, null, 2).replace(HIDDEN_ALL, (c) => (c.length > 1 ? unit(c, 0) + unit(c, 1) : unit(c, 0)));
}

// Text as nodes: plain runs as text, each hidden character as a marked escape.
export function shown(text) {
  const s = String(text);
  if (!HIDDEN.test(s)) return [document.createTextNode(s)];
  const out = [];
  let last = 0;
  for (const m of s.matchAll(HIDDEN_ALL)) {
    if (m.index > last) out.push(document.createTextNode(s.slice(last, m.index)));
    const n = m[0].codePointAt(0);
    const name = NAMES[n] || 'an invisible control or format character';
    const code = `U+${n.toString(16).toUpperCase().padStart(4, '0')}`;
    const mark = document.createElement('span');
    mark.className = 'hidden-char';
    mark.title = `${code}, ${name}: hidden in the original text`;
    mark.textContent = escapeOne(m[0]);
    out.push(mark);
    last = m.index + m[0].length;
  }
  if (last < s.length) out.push(document.createTextNode(s.slice(last)));
  return out;
}

// An element's text, replaced, with hidden characters shown escaped.
export function setText(el, text) {
  el.replaceChildren(...shown(text));
}

// Attributes people read: their text is escaped too.
const READ = new Set(['title', 'aria-label', 'placeholder', 'alt']);

// An element; its text children (and `text`) show hidden characters escaped, never as
// markup (text nodes only: the page runs under a strict Content-Security-Policy).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') setText(el, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, READ.has(k) ? escapeHidden(v) : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    if (c instanceof Node) el.append(c);
    else el.append(...shown(c));
  }
  return el;
}

// An SVG element; its text and labels show hidden characters escaped.
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = escapeHidden(v);
    else el.setAttribute(k, READ.has(k) ? escapeHidden(v) : String(v));
  }
  for (const c of children.flat(Infinity)) if (c) el.append(c);
  return el;
}

export const enc = encodeURIComponent;

// `fn` run once for a burst of calls: the first call schedules it 100 ms later, the
// others meanwhile join that run (a feed's events come in bursts).
export function coalesced(fn) {
  let pending = null;
  return () => {
    if (pending) return;
    pending = setTimeout(() => {
      pending = null;
      fn();
    }, 100);
  };
}
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

// The warning on a call whose tool name, call id or arguments hold hidden characters.
export function hiddenBadge() {
  return h('span', {
    class: 'badge hidden-chars',
    title: 'Invisible or text-reordering characters, shown escaped (\\u202e …) where they stand',
  }, '⚠ hidden characters');
}

export function notice(text, kind = 'warn') {
  while (notices.children.length >= 5) notices.firstChild.remove();
  const n = h('div', { class: `notice ${kind}` },
    h('span', {}, text),
    h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', onclick: () => n.remove() }, '×'));
  notices.append(n);
}

export function setLive(on, text) {
  setText(live, text || (on ? 'Live' : 'Reconnecting…'));
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
