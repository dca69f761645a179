// Waiting items: one element per item, holding the tool's name and call id, with its
// controls (Approve, Approve always, Deny, Edit, Submit), keyboard shortcuts on the
// focused item, and a list kept in step with the server without disturbing open forms.
// Hidden characters in what the model wrote show escaped, under a warning.

import { h, enc, since, when, notice, jsonView, hasHidden, hiddenBadge, editableJson, setText } from './dom.js';
import { api, decideCall } from './api.js';

export const tools = new Map();
// Who this page acts as (GET /v1/whoami), and each agent's rule on who decides.
export const me = { value: null };
const agents = new Map();

export async function loadTools() {
  if (!me.value) {
    try {
      me.value = await api('/v1/whoami');
      for (const a of await api('/v1/agents')) agents.set(a.name, a);
    } catch (e) {
      if (e.status === 401) throw e;
    }
  }
  if (tools.size) return;
  try {
    for (const t of await api('/v1/tools')) tools.set(t.name, t);
  } catch (e) {
    if (e.status === 401) throw e;
  }
}

// Why this person may not act on `item` of `run` (the server refuses the same), or
// null when they may: the page shows the reason where the buttons would be.
export function whyNot(run, item) {
  const who = me.value;
  if (!who) return null;
  if (item.kind !== 'approval') {
    return who.role === 'approver'
      ? `You (${who.name}) act as an approver (approver key): the app that started this run gives its output.`
      : null;
  }
  if (who.role === 'client') {
    return `You (${who.name}) act as a client (client key): a client cannot approve or deny. An approver of tenant ${who.tenant} decides this call.`;
  }
  // The agent's rule, with the tool's own (its groups win; four eyes if either).
  const agent = agents.get(run.agent);
  const tool = tools.get(item.tool);
  const rule = agent || tool ? {
    four_eyes: Boolean((agent && agent.four_eyes) || (tool && tool.four_eyes)),
    approvers: tool && tool.approvers && tool.approvers.length ? tool.approvers : (agent ? agent.approvers : []),
  } : null;
  if (rule && rule.four_eyes && run.started_by && run.started_by === who.name) {
    return `Four eyes: you (${who.name}) started this run, so someone else must approve its calls.`;
  }
  if (rule && rule.approvers.length && !rule.approvers.some((g) => who.groups.includes(g))) {
    return `Only the group${rule.approvers.length > 1 ? 's' : ''} ${rule.approvers.join(', ')} decide${rule.approvers.length > 1 ? '' : 's'} ${item.tool} calls of ${run.agent}; you (${who.name}) are not in one.`;
  }
  return null;
}

export function itemKey(runId, callId) {
  return `${runId}/${callId}`;
}

// A text in languages ({en_US: ..., zh_Hans: ...}) in the browser's language: the exact
// tag, else one of the same language, else English, else the first.
export function inLanguage(texts) {
  const want = (navigator.language || 'en-US').replace('-', '_');
  const base = want.split('_')[0];
  const keys = Object.keys(texts);
  const key = keys.find((k) => k === want) || keys.find((k) => k.split('_')[0] === base)
    || keys.find((k) => k === 'en_US') || keys[0];
  return key ? texts[key] : null;
}

// The tool's icon: an image given inline (a data: URL, from a file beside the tool; the
// page loads nothing from elsewhere) or a short text; nothing when it has none.
function toolIcon(tool) {
  const icon = tool && tool.icon;
  if (!icon) return null;
  if (icon.startsWith('data:image/')) {
    return h('img', { class: 'tool-icon', src: icon, alt: '', width: 20, height: 20 });
  }
  return h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, icon);
}

// What each kind of item waits for, on its badge.
const KIND_BADGES = {
  approval: 'needs approval',
  budget: 'budget reached',
  authorization: 'needs consent',
  submit_tool_output: 'client output',
};

// An authorization item: the user it waits for connects their account at the provider
// (the consent URL, bound to this run, call and user); the run goes on by itself once
// the provider sends them back. Nothing to decide here.
function consent(item) {
  const a = item.arguments || {};
  const provider = a.provider || 'the provider';
  const url = typeof a.consent_url === 'string' && /^https?:\/\//.test(a.consent_url) ? a.consent_url : null;
  return h('div', { class: 'consent' },
    h('p', {}, `The run acts for its user at ${provider} and has no access yet. `,
      'The user connects their account there; the run goes on by itself once they are back.'),
    url ? h('p', { class: 'actions' },
      h('a', { class: 'connect button primary', href: url, target: '_blank', rel: 'noopener noreferrer', 'aria-keyshortcuts': 'c' }, `Connect ${provider}`),
      ' ', h('span', { class: 'hint' }, 'Only the run\'s user should follow this link: it signs them in.'))
      : h('p', { class: 'why-not' }, 'The consent link is missing from this item.'));
}

// One waiting item: one element holding the tool's name and call id, with its controls.
export function waitingItem(run, item, onDecided) {
  const key = itemKey(run.id, item.call_id);
  const id = `item-${key.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  const tool = tools.get(item.tool);
  // Approval and budget items are decided (approve: run it / raise the limit); an
  // authorization item waits for its user's consent at the provider; the rest for a
  // client's output.
  const approval = item.kind === 'approval' || item.kind === 'budget';
  const budget = item.kind === 'budget';
  const outcome = h('p', { class: 'outcome', role: 'status' });
  const hidden = hasHidden([item.tool, item.call_id, item.arguments]);
  const actions = h('div', { class: 'actions' });
  const el = h('article', {
    class: `item ${approval ? 'approval' : item.kind === 'authorization' ? 'consent' : 'client'}`, tabindex: 0, id, 'data-key': key,
    'data-run': run.id, 'data-call': item.call_id, 'aria-labelledby': `${id}-title`,
    'aria-describedby': hidden ? `${id}-kind ${id}-hidden` : `${id}-kind`,
  });

  const setBusy = (busy) => {
    for (const b of el.querySelectorAll('button, textarea, input')) b.disabled = busy;
    el.classList.toggle('busy', busy);
  };
  const done = (text) => {
    el.classList.add('decided');
    setText(outcome, text);
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
        setText(outcome, msg);
        el.classList.add('lost');
        notice(msg);
        onDecided();
      } else if (fieldError && (e.status === 422 || e.status === 400)) {
        outcome.textContent = '';
        fieldError(e.message);
      } else if (e.status !== 401) {
        setText(outcome, `Not sent: ${e.message}`);
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

  const label = tool && tool.label ? inLanguage(tool.label) : null;
  const help = tool && tool.help ? inLanguage(tool.help) : null;
  const parts = [
    h('header', {},
      h('h3', { id: `${id}-title`, class: 'tool' }, toolIcon(tool),
        label ? h('span', { class: 'label' }, label, ' ') : null,
        label ? h('code', { class: 'toolname' }, item.tool) : item.tool,
        ' ', h('code', { class: 'callid' }, item.call_id)),
      h('span', { class: 'badges' },
        hidden ? hiddenBadge() : null,
        h('span', { id: `${id}-kind`, class: `badge kind-${item.kind}` }, KIND_BADGES[item.kind] || 'client output'))),
    hidden ? h('p', { id: `${id}-hidden`, class: 'hidden-note' },
      'This call holds characters that are invisible or reorder the text after them (\\u202e writes right to left). ',
      'Each is shown escaped, marked where it stands: the tool gets what you read here.') : null,
    tool && tool.description ? h('p', { class: 'desc' }, tool.description) : null,
    help ? h('p', { class: 'help' }, help) : null,
    h('p', { class: 'meta' },
      'agent ', h('b', {}, run.agent),
      ' · run ', h('a', { href: `/runs/${enc(run.id)}` }, run.id),
      ' · conversation ', h('a', { href: `/conversations/${enc(run.conversation_id)}` }, run.conversation_id),
      ' · waiting ', h('time', { 'data-since': run.updated_at, datetime: new Date(run.updated_at).toISOString() }, since(run.updated_at))),
    // Which rule (or hook) asked for a person, and until when the call can be approved.
    item.reason ? h('p', { class: 'reason' }, 'Asked because ', h('code', { class: 'rule' }, item.reason)) : null,
    item.expires_at ? h('p', { class: 'deadline' },
      'Expires ', h('time', { datetime: new Date(item.expires_at).toISOString() }, when(item.expires_at)),
      item.on_timeout === 'cancel_run' ? ': then the run is cancelled' : ': then the call is denied') : null,
    h('div', { class: 'args', 'aria-label': 'Arguments' }, jsonView(item.arguments)),
  ];

  const why = whyNot(run, item);
  if (why) {
    // No buttons for what the server would refuse: the reason instead.
    parts.push(h('p', { class: 'why-not', role: 'note' }, why));
    el.shortcuts = {};
  } else if (item.kind === 'authorization') {
    parts.push(consent(item));
    const link = () => el.querySelector('a.connect');
    el.shortcuts = { c: () => link() && link().click() };
  } else if (approval) {
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
      setText(editError, msg);
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

    // A budget is raised for this run only: no "always".
    const approve = h('button', { type: 'button', class: 'primary', 'aria-keyshortcuts': 'a', onclick: () => send('approve', {}, budget ? 'Raised for this run: it goes on.' : 'Approved.') }, budget ? 'Raise and continue' : 'Approve');
    const always = budget ? null : h('button', { type: 'button', 'aria-keyshortcuts': 'Shift+A', title: `Approve this call and every later ${item.tool} call in this conversation`, onclick: () => send('approve', { always: true }, `Approved, and ${item.tool} is approved from now on in this conversation.`) }, 'Approve always');
    const edit = h('button', { type: 'button', 'aria-keyshortcuts': 'e', onclick: () => { editor.value = editableJson(budget ? { limit: item.arguments.limit } : item.arguments); editError.textContent = ''; openForm(editForm, editor); } }, budget ? 'Set the limit' : 'Edit');
    actions.append(...[approve, always,
      h('button', { type: 'button', class: 'danger', 'aria-keyshortcuts': 'd', onclick: () => openForm(denyForm, reason) }, budget ? 'Stop the run' : 'Deny'),
      edit].filter(Boolean));
    parts.push(actions, denyForm, editForm);
    el.shortcuts = {
      a: () => approve.click(),
      d: () => openForm(denyForm, reason),
      e: () => edit.click(),
    };
    if (always) el.shortcuts.A = () => always.click();
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
        send('submit', { output: output.value, is_error: isError.checked }, 'Output submitted.', (m) => setText(outError, m));
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
  el.append(...parts.filter(Boolean));
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
export function reconcile(list, wanted, onDecided) {
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
