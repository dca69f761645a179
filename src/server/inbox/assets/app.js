// The approval inbox: what waits for a person, decided in place; a run's timeline; a
// conversation's stats and runs. It talks only to this server's /v1 API, with the
// bearer key the person gives once (kept in sessionStorage for the browser session).
// Live updates come from GET /v1/events, read with fetch() so that the key travels
// in the Authorization header, never in a URL.

const KEY = 'toolgate.key';
const FOLD_CHARS = 160;
const FOLD_LINES = 6;
const FOLD_ITEMS = 20;
const main = document.getElementById('main');
const notices = document.getElementById('notices');
const live = document.getElementById('live');
const forget = document.getElementById('forget-key');

// ---------------------------------------------------------------- elements

function h(tag, attrs, ...children) {
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

function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) if (c) el.append(c);
  return el;
}

const enc = encodeURIComponent;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function when(ms) {
  return ms ? new Date(ms).toLocaleString() : '';
}

function since(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs} h ${m % 60} min`;
  return `${Math.floor(hrs / 24)} days`;
}

function duration(ms) {
  if (ms === undefined || ms === null) return '';
  return ms < 1000 ? `${ms.toFixed(ms < 10 ? 1 : 0)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function badge(status) {
  return h('span', { class: `badge s-${status}` }, status.replaceAll('_', ' '));
}

function notice(text, kind = 'warn') {
  while (notices.children.length >= 5) notices.firstChild.remove();
  const n = h('div', { class: `notice ${kind}` },
    h('span', {}, text),
    h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', onclick: () => n.remove() }, '×'));
  notices.append(n);
}

function setLive(on, text) {
  live.textContent = text || (on ? 'Live' : 'Reconnecting…');
  live.classList.toggle('on', on);
}

// ---------------------------------------------------------------- the API

class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

function headers(extra) {
  const out = { ...extra };
  const key = sessionStorage.getItem(KEY);
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

async function request(path, { method = 'GET', body } = {}) {
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

async function failure(r) {
  const text = await r.text();
  let data = null;
  try { data = JSON.parse(text); } catch { /* not JSON */ }
  const e = data && data.error;
  return new ApiError(r.status, (e && e.type) || 'http', (e && e.message) || `${r.status} ${r.statusText}`);
}

async function api(path, options) {
  const r = await request(path, options);
  if (!r.ok) throw await failure(r);
  return r.json();
}

// A decision: recorded once the server answers 200 (its stream then carries the run's
// continuation, which this page does not need: the run goes on on the server).
async function decideCall(runId, action, body) {
  const r = await request(`/v1/runs/${enc(runId)}/${action}`, { method: 'POST', body: { ...body, stream: true } });
  if (!r.ok) throw await failure(r);
  if (r.body) r.body.cancel().catch(() => {});
}

// Server-sent events over fetch(), reconnecting with backoff until `signal` aborts.
async function follow(path, onEvent, signal) {
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

// ---------------------------------------------------------------- the key

let stopped = null;

function askForKey(message) {
  if (stopped) stopped.abort();
  stopped = null;
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
      start();
    },
  },
  h('h1', {}, 'This server needs an API key'),
  h('p', { id: 'key-help' }, 'Give the key toolgate serve was started with (TOOLGATE_API_KEY). It is kept for this browser session only and sent as the bearer token.'),
  h('label', { for: 'key' }, 'API key'),
  input,
  error,
  h('button', { type: 'submit', class: 'primary' }, 'Use key'));
  main.replaceChildren(form);
  input.focus();
}

forget.addEventListener('click', () => {
  sessionStorage.removeItem(KEY);
  location.reload();
});

// ---------------------------------------------------------------- JSON, folded

function foldedText(text, cls) {
  const lines = text.split('\n');
  if (text.length <= FOLD_CHARS && lines.length <= FOLD_LINES) return null;
  const preview = lines[0].slice(0, 80);
  return h('details', { class: `fold ${cls || ''}` },
    h('summary', {}, h('span', { class: 'preview' }, preview), ` … (${text.length.toLocaleString()} characters, ${lines.length} lines)`),
    h('pre', {}, text));
}

function jsonView(v) {
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

function textBlock(text) {
  return foldedText(text) || h('pre', { class: 'text' }, text);
}

// ---------------------------------------------------------------- waiting items

const tools = new Map();

async function loadTools() {
  if (tools.size) return;
  try {
    for (const t of await api('/v1/tools')) tools.set(t.name, t);
  } catch (e) {
    if (e.status === 401) throw e;
  }
}

function itemKey(runId, callId) {
  return `${runId}/${callId}`;
}

// One waiting item: one element holding the tool's name and call id, with its controls.
function waitingItem(run, item, onDecided) {
  const key = itemKey(run.id, item.call_id);
  const id = `item-${key.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  const tool = tools.get(item.tool);
  const approval = item.kind === 'approval';
  const outcome = h('p', { class: 'outcome', role: 'status' });
  const actions = h('div', { class: 'actions' });
  const el = h('article', {
    class: `item ${approval ? 'approval' : 'client'}`, tabindex: 0, id, 'data-key': key,
    'data-run': run.id, 'data-call': item.call_id, 'aria-labelledby': `${id}-title`,
    'aria-describedby': `${id}-kind`,
  });

  const setBusy = (busy) => {
    for (const b of el.querySelectorAll('button, textarea, input')) b.disabled = busy;
    el.classList.toggle('busy', busy);
  };
  const done = (text) => {
    el.classList.add('decided');
    outcome.textContent = text;
    for (const f of el.querySelectorAll('form')) f.hidden = true;
    actions.hidden = true;
    notice(`${item.tool} (${item.call_id}): ${text}`, 'ok');
    onDecided();
  };
  const send = async (action, body, text, fieldError) => {
    setBusy(true);
    outcome.textContent = 'Sending…';
    try {
      await decideCall(run.id, action, { call_id: item.call_id, ...body });
      done(text);
    } catch (e) {
      setBusy(false);
      if (e.status === 409) {
        const msg = `Too late for ${item.tool} (${item.call_id}): someone else already decided it, or the run moved on. Nothing was changed by you. The server said: ${e.message}`;
        outcome.textContent = msg;
        el.classList.add('lost');
        notice(msg);
        onDecided();
      } else if (fieldError && (e.status === 422 || e.status === 400)) {
        outcome.textContent = '';
        fieldError(e.message);
      } else if (e.status !== 401) {
        outcome.textContent = `Not sent: ${e.message}`;
      }
    }
  };

  const openForm = (form, focus) => {
    actions.hidden = true;
    form.hidden = false;
    focus.focus();
  };
  const closeForm = (form) => {
    form.hidden = true;
    actions.hidden = false;
    el.focus();
  };

  const parts = [
    h('header', {},
      h('h3', { id: `${id}-title`, class: 'tool' }, item.tool, ' ', h('code', { class: 'callid' }, item.call_id)),
      h('span', { id: `${id}-kind`, class: `badge kind-${item.kind}` }, approval ? 'needs approval' : 'client output')),
    tool && tool.description ? h('p', { class: 'desc' }, tool.description) : null,
    h('p', { class: 'meta' },
      'agent ', h('b', {}, run.agent),
      ' · run ', h('a', { href: `/runs/${enc(run.id)}` }, run.id),
      ' · conversation ', h('a', { href: `/conversations/${enc(run.conversation_id)}` }, run.conversation_id),
      ' · waiting ', h('time', { 'data-since': run.updated_at, datetime: new Date(run.updated_at).toISOString() }, since(run.updated_at))),
    h('div', { class: 'args', 'aria-label': 'Arguments' }, jsonView(item.arguments)),
  ];

  if (approval) {
    // Deny, with a reason the model reads.
    const reasonId = `${id}-reason`;
    const reason = h('textarea', { id: reasonId, rows: 2, placeholder: 'Not now: …' });
    const denyForm = h('form', {
      class: 'inline', hidden: true,
      onsubmit: (e) => {
        e.preventDefault();
        const r = reason.value.trim();
        send('deny', r ? { reason: r } : {}, r ? `Denied: “${r}”. The model reads the reason.` : 'Denied.');
      },
      onkeydown: (e) => { if (e.key === 'Escape') closeForm(denyForm); },
    },
    h('label', { for: reasonId }, 'Reason (the model reads it)'),
    reason,
    h('div', { class: 'row' },
      h('button', { type: 'submit', class: 'danger' }, 'Deny'),
      h('button', { type: 'button', onclick: () => closeForm(denyForm) }, 'Cancel')));

    // Edit the arguments, then approve them; checked here, then by the server.
    const editId = `${id}-args`;
    const errId = `${id}-args-error`;
    const editor = h('textarea', { id: editId, rows: 8, spellcheck: 'false', class: 'code', 'aria-describedby': errId });
    const editError = h('p', { id: errId, class: 'field-error', role: 'alert' });
    const showError = (msg) => {
      editError.textContent = msg;
      editor.setAttribute('aria-invalid', 'true');
      editor.focus();
    };
    const editForm = h('form', {
      class: 'inline', hidden: true,
      onsubmit: (e) => {
        e.preventDefault();
        let args;
        try {
          args = JSON.parse(editor.value);
        } catch (err) {
          showError(`Not valid JSON: ${err.message}`);
          return;
        }
        if (!args || typeof args !== 'object' || Array.isArray(args)) {
          showError('The arguments must be a JSON object ({ … }).');
          return;
        }
        editError.textContent = '';
        editor.removeAttribute('aria-invalid');
        send('approve', { arguments: args }, 'Approved with your edited arguments.', showError);
      },
      onkeydown: (e) => { if (e.key === 'Escape') closeForm(editForm); },
    },
    h('label', { for: editId }, 'Arguments (JSON)'),
    editor,
    editError,
    h('div', { class: 'row' },
      h('button', { type: 'submit', class: 'primary' }, 'Approve'),
      h('button', { type: 'button', onclick: () => closeForm(editForm) }, 'Cancel')));

    actions.append(
      h('button', { type: 'button', class: 'primary', 'aria-keyshortcuts': 'a', onclick: () => send('approve', {}, 'Approved.') }, 'Approve'),
      h('button', { type: 'button', 'aria-keyshortcuts': 'Shift+A', title: `Approve this call and every later ${item.tool} call in this conversation`, onclick: () => send('approve', { always: true }, `Approved, and ${item.tool} is approved from now on in this conversation.`) }, 'Approve always'),
      h('button', { type: 'button', class: 'danger', 'aria-keyshortcuts': 'd', onclick: () => openForm(denyForm, reason) }, 'Deny'),
      h('button', { type: 'button', 'aria-keyshortcuts': 'e', onclick: () => { editor.value = JSON.stringify(item.arguments, null, 2); editError.textContent = ''; openForm(editForm, editor); } }, 'Edit'));
    parts.push(actions, denyForm, editForm);
    el.shortcuts = {
      a: () => actions.querySelector('button').click(),
      A: () => actions.querySelectorAll('button')[1].click(),
      d: () => openForm(denyForm, reason),
      e: () => actions.querySelectorAll('button')[3].click(),
    };
  } else {
    const outId = `${id}-output`;
    const output = h('textarea', { id: outId, rows: 3 });
    const isError = h('input', { type: 'checkbox', id: `${id}-is-error` });
    const outError = h('p', { class: 'field-error', role: 'alert' });
    const form = h('form', {
      class: 'inline',
      onsubmit: (e) => {
        e.preventDefault();
        if (!output.value.trim()) { outError.textContent = 'Write the output first.'; output.focus(); return; }
        outError.textContent = '';
        send('submit', { output: output.value, is_error: isError.checked }, 'Output submitted.', (m) => { outError.textContent = m; });
      },
    },
    h('label', { for: outId }, `Output of ${item.tool} for the model`),
    output,
    outError,
    h('div', { class: 'row' },
      h('label', { class: 'check' }, isError, ' It is an error'),
      h('button', { type: 'submit', class: 'primary' }, 'Submit')));
    parts.push(form);
    el.shortcuts = { s: () => output.focus() };
  }
  parts.push(outcome);
  el.append(...parts);
  return el;
}

// Keys on a focused item: a approve, A approve always, d deny, e edit, s output,
// j/k (or arrows) the next/previous item.
document.addEventListener('keydown', (e) => {
  const el = e.target;
  if (!(el instanceof HTMLElement) || !el.classList.contains('item') || e.ctrlKey || e.metaKey || e.altKey) return;
  const items = [...document.querySelectorAll('article.item')];
  const i = items.indexOf(el);
  if (e.key === 'j' || e.key === 'ArrowDown') { items[Math.min(i + 1, items.length - 1)].focus(); e.preventDefault(); return; }
  if (e.key === 'k' || e.key === 'ArrowUp') { items[Math.max(i - 1, 0)].focus(); e.preventDefault(); return; }
  if (el.classList.contains('decided') || el.classList.contains('busy')) return;
  const act = el.shortcuts && el.shortcuts[e.key];
  if (act) { e.preventDefault(); act(); }
});

// Keeps a list of items in step with `wanted` (key -> [run, item]), leaving the ones
// still there untouched (an open form, a focused item stay as they are).
function reconcile(list, wanted, onDecided) {
  const have = new Map([...list.children].map((li) => [li.dataset.key, li]));
  let prev = null;
  for (const [key, [run, item]] of wanted) {
    let li = have.get(key);
    if (!li) li = h('li', { 'data-key': key }, waitingItem(run, item, onDecided));
    have.delete(key);
    if (prev ? prev.nextSibling !== li : list.firstChild !== li) {
      if (prev) prev.after(li); else list.prepend(li);
    }
    prev = li;
  }
  for (const li of have.values()) {
    // A decided item stays until the run has moved on: its outcome is read first.
    li.remove();
  }
}

setInterval(() => {
  for (const t of document.querySelectorAll('time[data-since]')) t.textContent = since(Number(t.dataset.since));
}, 15000);

// ---------------------------------------------------------------- pages

function runsTable(runs, caption) {
  if (!runs.length) return h('p', { class: 'muted' }, 'No runs.');
  return h('div', { class: 'table-wrap' }, h('table', { class: 'runs' },
    h('caption', { class: 'sr-only' }, caption),
    h('thead', {}, h('tr', {}, ['Run', 'Status', 'Agent', 'Conversation', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, runs.map((r) => h('tr', { 'data-run': r.id },
      h('td', {}, h('a', { href: `/runs/${enc(r.id)}` }, r.id)),
      h('td', {}, badge(r.status)),
      h('td', {}, r.agent),
      h('td', {}, h('a', { href: `/conversations/${enc(r.conversation_id)}` }, r.conversation_id)),
      h('td', {}, h('time', { datetime: new Date(r.updated_at).toISOString() }, when(r.updated_at))))))));
}

async function inboxPage(signal) {
  document.title = 'Inbox · toolgate';
  const count = h('span', { class: 'count' });
  const list = h('ol', { class: 'queue', 'aria-label': 'Waiting items' });
  const empty = h('p', { class: 'empty', hidden: true }, 'Nothing waits for you. New requests appear here as runs pause.');
  const recent = h('div', { id: 'recent' });
  main.replaceChildren(
    h('section', { 'aria-labelledby': 'inbox-title' },
      h('h1', { id: 'inbox-title' }, 'Waiting for you ', count),
      h('p', { class: 'hint' }, 'Keys on a focused item: ', h('kbd', {}, 'a'), ' approve · ', h('kbd', {}, 'A'), ' approve always · ', h('kbd', {}, 'd'), ' deny · ', h('kbd', {}, 'e'), ' edit · ', h('kbd', {}, 'j'), '/', h('kbd', {}, 'k'), ' next/previous'),
      empty, list),
    h('section', { 'aria-labelledby': 'recent-title' }, h('h2', { id: 'recent-title' }, 'Recent runs'), recent));

  let pending = null;
  const refresh = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      try {
        await loadTools();
        const [paused, latest] = await Promise.all([
          api('/v1/runs?status=requires_action&limit=200'),
          api('/v1/runs?limit=15'),
        ]);
        paused.sort((a, b) => b.updated_at - a.updated_at);
        const wanted = new Map();
        for (const run of paused) {
          for (const item of (run.required_action && run.required_action.items) || []) {
            wanted.set(itemKey(run.id, item.call_id), [run, item]);
          }
        }
        reconcile(list, wanted, refresh);
        count.textContent = `(${wanted.size})`;
        empty.hidden = wanted.size > 0;
        recent.replaceChildren(runsTable(latest, 'Recent runs'));
      } catch (e) {
        if (e.status !== 401) notice(`Could not read the runs: ${e.message}`);
      }
    }, 100);
  };
  refresh();
  follow('/v1/events', (name) => {
    if (name === 'open' || name === 'run' || name === 'lagged' || name === 'run.started') refresh();
  }, signal);
  // Runs paused by another process (the CLI) are not on this server's feed.
  const poll = setInterval(() => { if (!document.hidden) refresh(); }, 10000);
  signal.addEventListener('abort', () => clearInterval(poll));
}

function decisionText(p) {
  const d = p.decision;
  if (!d) return p.state === 'waiting' ? 'waiting for a decision' : p.state;
  const at = p.decided_at ? ` at ${when(p.decided_at)}` : '';
  switch (d.type) {
    case 'approve': return `approved${at}`;
    case 'approve_always': return `approved always (for this conversation)${at}`;
    case 'deny': return `denied${at}${d.reason ? `: “${d.reason}”` : ''}`;
    case 'edit': return `approved with edited arguments${at}`;
    case 'submit': return `output submitted${at}${d.is_error ? ' (as an error)' : ''}`;
    default: return `${d.type}${at}`;
  }
}

function callEntry(call, record, pause, toolMessage) {
  const status = record ? record.status : (pause && pause.state === 'waiting' ? 'waiting' : 'pending');
  const body = [h('h4', {}, 'Arguments'), h('div', { class: 'args' }, jsonView(call.arguments))];
  if (pause) {
    body.push(h('p', { class: 'pause' },
      h('b', {}, pause.kind === 'approval' ? 'Paused for approval' : 'Paused for the client\'s output'),
      ` — ${decisionText(pause)} (who decided is not recorded).`));
    if (pause.decision && pause.decision.type === 'edit') {
      body.push(h('h4', {}, 'Edited arguments'), h('div', { class: 'args' }, jsonView(pause.decision.arguments)));
    }
  }
  if (record && record.error_message) body.push(h('p', { class: 'error' }, record.error_message));
  const result = record && record.result !== null && record.result !== undefined ? record.result : (toolMessage ? toolMessage.content : null);
  if (result !== null) {
    body.push(h('h4', {}, 'Result'), textBlock(result));
    if (record && record.result_size > (record.result || '').length) body.push(h('p', { class: 'muted' }, `(cut; ${record.result_size} bytes in all)`));
  }
  return h('li', { class: 'call' }, h('details', { open: status === 'waiting' ? true : undefined },
    h('summary', {}, h('span', { class: 'tool' }, call.name), ' ', h('code', {}, call.id), ' ', badge(status),
      record ? h('span', { class: 'muted' }, ` ${duration(record.duration_ms)}`) : null,
      record ? h('span', { class: 'muted' }, ` · ${when(record.started_at)}`) : null),
    h('div', { class: 'call-body' }, body)));
}

function timelineView(t) {
  const records = new Map(t.calls.map((c) => [c.call_id, c]));
  const pauses = new Map(t.pauses.map((p) => [p.call_id, p]));
  const toolMessages = new Map(t.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m]));
  const shown = new Set();
  const entries = [];
  for (const m of t.messages) {
    if (m.role === 'tool') continue;
    const who = { user: 'User', assistant: 'Model', system: 'System' }[m.role] || m.role;
    const li = h('li', { class: `msg ${m.role}` }, h('div', { class: 'who' }, who));
    if (m.content) li.append(textBlock(m.content));
    if (m.tool_calls && m.tool_calls.length) {
      li.append(h('ol', { class: 'calls' }, m.tool_calls.map((c) => {
        shown.add(c.id);
        return callEntry(c, records.get(c.id), pauses.get(c.id), toolMessages.get(c.id));
      })));
    }
    entries.push(li);
  }
  const others = t.calls.filter((c) => !shown.has(c.call_id));
  if (others.length) {
    entries.push(h('li', { class: 'msg' }, h('div', { class: 'who' }, 'Other calls'),
      h('ol', { class: 'calls' }, others.map((r) => callEntry({ id: r.call_id, name: r.tool, arguments: r.arguments }, r, pauses.get(r.call_id), null)))));
  }
  if (!entries.length) return h('p', { class: 'muted' }, 'No messages yet.');
  return h('ol', { class: 'timeline' }, entries);
}

function runHeader(run) {
  const rows = [
    ['Status', badge(run.status)],
    ['Agent', run.agent],
    ['Conversation', h('a', { href: `/conversations/${enc(run.conversation_id)}` }, run.conversation_id)],
    ['Model', run.model],
    ['Turns', `${run.iteration} of at most ${run.max_iterations}`],
    ['Tokens', `${run.usage.total_tokens} (${run.usage.model_calls} model calls)`],
    ['Started', when(run.created_at)],
    ['Updated', when(run.updated_at)],
  ];
  if (run.last_error) rows.push(['Error', h('span', { class: 'error' }, run.last_error)]);
  if (run.output) rows.push(['Answer', textBlock(run.output)]);
  return h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function eventLine(name, data) {
  const bits = [];
  if (data && typeof data === 'object') {
    if (data.tool) bits.push(data.tool);
    if (data.call_id) bits.push(data.call_id);
    if (data.status) bits.push(data.status);
    if (data.text) bits.push(JSON.stringify(data.text.length > 60 ? `${data.text.slice(0, 60)}…` : data.text));
    if (data.error) bits.push(data.error);
    if (typeof data.duration_ms === 'number') bits.push(duration(data.duration_ms));
  }
  return h('li', {}, h('time', {}, new Date().toLocaleTimeString()), ' ', h('b', {}, name), bits.length ? ` ${bits.join(' · ')}` : '');
}

async function runPage(id, signal) {
  document.title = `Run ${id} · toolgate`;
  const head = h('div', {});
  const waiting = h('ol', { class: 'queue', 'aria-label': 'Waiting items' });
  const waitingSection = h('section', { 'aria-labelledby': 'waiting-title', hidden: true }, h('h2', { id: 'waiting-title' }, 'Waiting for you'), waiting);
  const timeline = h('div', {});
  const events = h('ol', { class: 'events', reversed: true, 'aria-live': 'polite', 'aria-relevant': 'additions' });
  main.replaceChildren(
    h('h1', {}, 'Run ', h('code', {}, id)),
    head, waitingSection,
    h('section', { 'aria-labelledby': 'timeline-title' }, h('h2', { id: 'timeline-title' }, 'Timeline'), timeline),
    h('section', { 'aria-labelledby': 'events-title' }, h('h2', { id: 'events-title' }, 'Live events'),
      h('p', { class: 'muted' }, 'Events of this run appear here as they happen.'), events));
  let runId = id;
  let status = null;
  let pending = null;
  const load = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      try {
        await loadTools();
        const t = await api(`/v1/runs/${enc(id)}/timeline`);
        runId = t.run.id;
        status = t.run.status;
        head.replaceChildren(runHeader(t.run));
        const wanted = new Map();
        for (const item of (t.run.required_action && t.run.required_action.items) || []) {
          wanted.set(itemKey(t.run.id, item.call_id), [t.run, item]);
        }
        reconcile(waiting, wanted, load);
        waitingSection.hidden = wanted.size === 0;
        timeline.replaceChildren(timelineView(t));
      } catch (e) {
        if (e.status === 404) main.replaceChildren(h('h1', {}, 'No such run'), h('p', {}, e.message), h('p', {}, h('a', { href: '/' }, 'Back to the inbox')));
        else if (e.status !== 401) notice(`Could not read the run: ${e.message}`);
      }
    }, 100);
  };
  load();
  follow('/v1/events', (name, data) => {
    if (name === 'open' || name === 'lagged') { load(); return; }
    if (!data || typeof data !== 'object') return;
    const of = name === 'run' ? data.id : data.run_id;
    if (of !== runId) return;
    events.prepend(eventLine(name, data));
    while (events.children.length > 200) events.lastChild.remove();
    if (name === 'run' || name.startsWith('run.') || name === 'tool.finished' || name === 'tool.resolved') load();
  }, signal);
  // A run driven by another process: read it again while it runs.
  const poll = setInterval(() => { if (!document.hidden && status === 'in_progress') load(); }, 3000);
  signal.addEventListener('abort', () => clearInterval(poll));
}

// Calls per tool, outcomes with the success rate, and p50/p95 durations, as one SVG.
function statsChart(s) {
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

async function conversationPage(id, signal) {
  document.title = `Conversation ${id} · toolgate`;
  const stats = h('div', {});
  const runs = h('div', {});
  const statusSel = h('select', { id: 'f-status' }, h('option', { value: '' }, 'All'),
    ['in_progress', 'requires_action', 'completed', 'incomplete', 'failed', 'cancelled'].map((s) => h('option', { value: s }, s.replaceAll('_', ' '))));
  const agentSel = h('select', { id: 'f-agent' }, h('option', { value: '' }, 'All'));
  main.replaceChildren(
    h('h1', {}, 'Conversation ', h('code', {}, id)),
    h('section', { 'aria-labelledby': 'stats-title' }, h('h2', { id: 'stats-title' }, 'Calls'), stats),
    h('section', { 'aria-labelledby': 'runs-title' }, h('h2', { id: 'runs-title' }, 'Runs'),
      h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() },
        h('label', { for: 'f-status' }, 'Status'), statusSel,
        h('label', { for: 'f-agent' }, 'Agent'), agentSel),
      runs));
  const loadStats = async () => {
    try {
      const s = await api(`/v1/conversations/${enc(id)}/stats`);
      const numbers = [
        ['Calls', s.total_calls], ['Succeeded', s.successful_calls], ['Failed', s.failed_calls],
        ['Denied', s.denied_calls], ['Client', s.client_calls], ['Success rate', `${s.success_rate}%`],
        ['p50', duration(s.duration_ms.p50)], ['p95', duration(s.duration_ms.p95)],
      ];
      stats.replaceChildren(
        h('dl', { class: 'numbers' }, numbers.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, String(v))))),
        s.total_calls ? statsChart(s) : h('p', { class: 'muted' }, 'No calls recorded yet.'));
    } catch (e) {
      if (e.status === 404) stats.replaceChildren(h('p', { class: 'muted' }, e.message));
      else if (e.status !== 401) notice(`Could not read the stats: ${e.message}`);
    }
  };
  const loadRuns = async () => {
    try {
      const q = statusSel.value ? `&status=${enc(statusSel.value)}` : '';
      const list = await api(`/v1/runs?conversation_id=${enc(id)}&limit=200${q}`);
      const agents = [...new Set(list.map((r) => r.agent))].sort();
      const chosen = agentSel.value;
      agentSel.replaceChildren(h('option', { value: '' }, 'All'), ...agents.map((a) => h('option', { value: a, selected: a === chosen }, a)));
      if (chosen && !agents.includes(chosen)) agentSel.append(h('option', { value: chosen, selected: true }, chosen));
      runs.replaceChildren(runsTable(list.filter((r) => !chosen || r.agent === chosen), 'Runs of this conversation'));
    } catch (e) {
      if (e.status !== 401) notice(`Could not read the runs: ${e.message}`);
    }
  };
  statusSel.addEventListener('change', loadRuns);
  agentSel.addEventListener('change', loadRuns);
  loadStats();
  loadRuns();
  follow('/v1/events', (name, data) => {
    if (name === 'run' && data && data.conversation_id === id) { loadStats(); loadRuns(); }
  }, signal);
}

// ---------------------------------------------------------------- start

function start() {
  if (stopped) stopped.abort();
  stopped = new AbortController();
  forget.hidden = !sessionStorage.getItem(KEY);
  setLive(false, 'Connecting…');
  const path = location.pathname;
  let m;
  if ((m = path.match(/^\/runs\/([^/]+)$/))) runPage(decodeURIComponent(m[1]), stopped.signal);
  else if ((m = path.match(/^\/conversations\/([^/]+)$/))) conversationPage(decodeURIComponent(m[1]), stopped.signal);
  else inboxPage(stopped.signal);
}

start();
