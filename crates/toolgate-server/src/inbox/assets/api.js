// The API: JSON requests with the bearer key (kept in sessionStorage for the browser
// session), decisions, server-sent events read with fetch() (so that the key travels in
// the Authorization header, never in a URL), and the form that asks for the key.

import { h, enc, setLive, sleep } from './dom.js';

export const KEY = 'toolgate.key';
const main = document.getElementById('main');
const forget = document.getElementById('forget-key');

export class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

export function headers(extra) {
  const out = { ...extra };
  const key = sessionStorage.getItem(KEY);
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

export async function request(path, { method = 'GET', body } = {}) {
  let r;
  try {
    r = await fetch(path, {
      method,
      headers: headers(body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'network', `The server cannot be reached (${e.message}).`);
  }
  if (r.status === 401) {
    askForKey(sessionStorage.getItem(KEY) ? 'That key was refused. Give the server\'s API key.' : null);
    throw new ApiError(401, 'unauthorized', 'This server needs an API key.');
  }
  return r;
}

export async function failure(r) {
  const text = await r.text();
  let data = null;
  try { data = JSON.parse(text); } catch { /* not JSON */ }
  const e = data && data.error;
  return new ApiError(r.status, (e && e.type) || 'http', (e && e.message) || `${r.status} ${r.statusText}`);
}

export async function api(path, options) {
  const r = await request(path, options);
  if (!r.ok) throw await failure(r);
  return r.json();
}

// The most recent call records matching `query` (at most 1,000: the charts say so).
export async function recentCalls(query) {
  const page = await api(`/v1/calls?limit=1000&${query}`);
  return page.calls || [];
}

// A decision: recorded once the server answers 200 (its stream then carries the run's
// continuation, which this page does not need: the run goes on on the server).
// Who decides: the name given in the header (kept in localStorage), else `inbox`.
export const DECIDER = 'toolgate.decider';

export async function decideCall(runId, action, body) {
  const by = (localStorage.getItem(DECIDER) || '').trim() || 'inbox';
  const r = await request(`/v1/runs/${enc(runId)}/${action}`, { method: 'POST', body: { ...body, by, stream: true } });
  if (!r.ok) throw await failure(r);
  if (r.body) r.body.cancel().catch(() => {});
}

// Server-sent events over fetch(), reconnecting with backoff until `signal` aborts.
export async function follow(path, onEvent, signal) {
  let wait = 500;
  while (!signal.aborted) {
    try {
      const r = await fetch(path, { headers: headers({ Accept: 'text/event-stream' }), signal, cache: 'no-store' });
      if (r.status === 401) { askForKey(null); return; }
      if (!r.ok) throw new Error(`${r.status}`);
      setLive(true);
      wait = 500;
      onEvent('open', null);
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replaceAll('\r\n', '\n');
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          let name = 'message';
          const data = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const [field, ...rest] = line.split(':');
            const val = rest.join(':').replace(/^ /, '');
            if (field === 'event') name = val;
            else if (field === 'data') data.push(val);
          }
          if (!data.length) continue;
          let parsed = null;
          try { parsed = JSON.parse(data.join('\n')); } catch { parsed = data.join('\n'); }
          onEvent(name, parsed);
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    setLive(false);
    await sleep(wait);
    wait = Math.min(wait * 2, 10000);
  }
}

let session = null;
let restart = () => {};

// What to do once a key is given.
export function onKey(fn) {
  restart = fn;
}

// A new page session: the previous one's streams stop.
export function newSession() {
  endSession();
  session = new AbortController();
  return session.signal;
}

// The page's streams and polls stop (it is left, or kept in the back/forward cache).
export function endSession() {
  if (session) session.abort();
  session = null;
}

export function askForKey(message) {
  endSession();
  sessionStorage.removeItem(KEY);
  forget.hidden = true;
  setLive(false, 'Needs a key');
  if (document.getElementById('key-form')) return;
  const input = h('input', { id: 'key', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': 'key-help key-error' });
  const error = h('p', { id: 'key-error', class: 'field-error', role: 'alert' }, message || '');
  const form = h('form', {
    id: 'key-form', class: 'card key',
    onsubmit: async (e) => {
      e.preventDefault();
      const key = input.value.trim();
      if (!key) { error.textContent = 'Type the key first.'; return; }
      sessionStorage.setItem(KEY, key);
      try {
        await api('/v1/runs?limit=1');
      } catch (err) {
        error.textContent = err.status === 401 ? 'That key was refused: check it and try again.' : err.message;
        return;
      }
      restart();
    },
  },
  h('h1', {}, 'This server needs an API key'),
  h('p', { id: 'key-help' }, 'Give your key: one made with toolgate keys create, your app\'s login token, or the key toolgate serve was started with (TOOLGATE_API_KEY). It is kept for this browser session only and sent as the bearer token.'),
  h('label', { for: 'key' }, 'API key'),
  input,
  error,
  h('button', { type: 'submit', class: 'primary' }, 'Use key'));
  main.replaceChildren(form);
  input.focus();
}

