// The pages: the inbox, a run's page (timeline, tree of child runs and live events), and
// a conversation's page (stats with charts, tokens and cost, and runs).

import { h, enc, when, duration, badge, notice, jsonView, textBlock, hasHidden, hiddenBadge, escapeHidden, coalesced } from './dom.js';
import { api, follow, recentCalls } from './api.js';
import { loadTools, itemKey, reconcile } from './items.js';
import { statsChart, overTimeChart, latencyChart, tokensChart } from './chart.js';

const main = document.getElementById('main');
const utf8 = new TextEncoder();

// Figures as labelled tiles: [[label, value], ...].
export function numbersView(rows) {
  return h('dl', { class: 'numbers' }, rows.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, String(v)))));
}

// A table of run objects; `more` adds columns (`tenant`, `model`).
export function runsTable(runs, caption, more = {}) {
  if (!runs.length) return h('p', { class: 'muted' }, 'No runs.');
  const heads = ['Run', 'Status', 'Agent', ...(more.model ? ['Model'] : []), 'Conversation', ...(more.tenant ? ['Tenant'] : []), 'Updated'];
  return h('div', { class: 'table-wrap' }, h('table', { class: 'runs' },
    h('caption', { class: 'sr-only' }, caption),
    h('thead', {}, h('tr', {}, heads.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, runs.map((r) => h('tr', { 'data-run': r.id },
      h('td', {}, h('a', { href: `/runs/${enc(r.id)}` }, r.id), r.parent_run_id ? h('span', { class: 'muted' }, ' (child)') : null),
      h('td', {}, badge(r.status)),
      h('td', {}, r.agent),
      more.model ? h('td', {}, r.model) : null,
      h('td', {}, h('a', { href: `/conversations/${enc(r.conversation_id)}` }, r.conversation_id)),
      more.tenant ? h('td', {}, r.tenant) : null,
      h('td', {}, h('time', { datetime: new Date(r.updated_at).toISOString() }, when(r.updated_at))))))));
}

// A run's tree: each child run (a sub-agent's, a workflow's) under the call it carries
// out, with its status and calls.
export function treeView(t, here) {
  const s = t.summary;
  const line = [t.run_id === here ? h('b', {}, t.agent) : h('a', { href: `/runs/${enc(t.run_id)}` }, t.agent), ' ',
    h('code', {}, t.run_id), ' ', badge(t.status),
    h('span', { class: 'muted' }, ` ${s.calls} call${s.calls === 1 ? '' : 's'}, ${s.success_rate}% ok, ${s.usage.total_tokens} tokens`),
    t.parent_call_id ? h('span', { class: 'muted' }, ` · for call ${t.parent_call_id}`) : null];
  return h('li', {}, line, t.children.length ? h('ul', {}, t.children.map((c) => treeView(c, here))) : null);
}

export async function inboxPage(signal) {
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

  const refresh = coalesced(async () => {
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
  });
  refresh();
  follow('/v1/events', (name) => {
    if (name === 'open' || name === 'run' || name === 'lagged' || name === 'run.started') refresh();
  }, signal);
  // Runs changed by another process (the CLI, another server) come on the same feed.
}

export function decisionText(p) {
  const d = p.decision;
  if (!d) return p.state === 'waiting' ? 'waiting for a decision' : p.state;
  // The identity that decided, with the name typed in the page beside it.
  const who = p.decided_by ? ` by ${p.decided_by}${p.decided_as && p.decided_as !== p.decided_by ? ` (as ${p.decided_as})` : ''}` : '';
  const at = who + (p.decided_at ? ` at ${when(p.decided_at)}` : '');
  switch (d.type) {
    case 'approve': return `approved${at}`;
    case 'approve_always': return `approved always (for this conversation)${at}`;
    case 'deny': return `denied${at}${d.reason ? `: “${d.reason}”` : ''}`;
    case 'edit': return `approved with edited arguments${at}`;
    case 'submit': return `output submitted${at}${d.is_error ? ' (as an error)' : ''}`;
    default: return `${d.type}${at}`;
  }
}

export function callEntry(call, record, pause, toolMessage) {
  const status = record ? record.status : (pause && pause.state === 'waiting' ? 'waiting' : 'pending');
  const body = [h('h4', {}, 'Arguments'), h('div', { class: 'args' }, jsonView(call.arguments))];
  if (pause) {
    body.push(h('p', { class: 'pause' },
      h('b', {}, pause.kind === 'approval' ? 'Paused for approval' : 'Paused for the client\'s output'),
      ` — ${decisionText(pause)}.`));
    if (pause.decision && pause.decision.type === 'edit') {
      body.push(h('h4', {}, 'Edited arguments'), h('div', { class: 'args' }, jsonView(pause.decision.arguments)));
    }
  }
  if (record && record.error_message) body.push(h('p', { class: 'error' }, record.error_message));
  const result = record && record.result !== null && record.result !== undefined ? record.result : (toolMessage ? toolMessage.content : null);
  if (result !== null) {
    body.push(h('h4', {}, 'Result'), textBlock(result));
    // result_size counts UTF-8 bytes (a string's length counts UTF-16 units).
    if (record && record.result_size > utf8.encode(record.result || '').length) body.push(h('p', { class: 'muted' }, `(cut; ${record.result_size} bytes in all)`));
  }
  return h('li', { class: 'call' }, h('details', { open: status === 'waiting' ? true : undefined },
    h('summary', {}, h('span', { class: 'tool' }, call.name), ' ', h('code', {}, call.id), ' ', badge(status),
      hasHidden([call.name, call.id, call.arguments]) ? [' ', hiddenBadge()] : null,
      record ? h('span', { class: 'muted' }, ` ${duration(record.duration_ms)}`) : null,
      record ? h('span', { class: 'muted' }, ` · ${when(record.started_at)}`) : null),
    h('div', { class: 'call-body' }, body)));
}

export function timelineView(t) {
  const records = new Map(t.calls.map((c) => [c.call_id, c]));
  const pauses = new Map(t.pauses.map((p) => [p.call_id, p]));
  const toolMessages = new Map(t.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m]));
  const shown = new Set();
  const entries = [];
  for (const m of t.messages) {
    if (m.role === 'tool') continue;
    const who = { user: 'User', assistant: 'Model', system: 'System' }[m.role] || m.role;
    const li = h('li', { class: `msg ${m.role}` }, h('div', { class: 'who' }, who));
    for (const r of m.thinking || []) {
      li.append(h('details', { class: 'reasoning' }, h('summary', {}, 'Reasoning'), textBlock(r.text || '')));
    }
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

export function runHeader(run) {
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

export function eventLine(name, data) {
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

export async function runPage(id, signal) {
  document.title = escapeHidden(`Run ${id} · toolgate`);
  const head = h('div', {});
  const waiting = h('ol', { class: 'queue', 'aria-label': 'Waiting items' });
  const waitingSection = h('section', { 'aria-labelledby': 'waiting-title', hidden: true }, h('h2', { id: 'waiting-title' }, 'Waiting for you'), waiting);
  const timeline = h('div', {});
  const tree = h('ul', { class: 'tree' });
  const treeSection = h('section', { 'aria-labelledby': 'tree-title', hidden: true }, h('h2', { id: 'tree-title' }, 'Runs in this tree'), tree);
  const events = h('ol', { class: 'events', reversed: true, 'aria-live': 'polite', 'aria-relevant': 'additions' });
  main.replaceChildren(
    h('h1', {}, 'Run ', h('code', {}, id)),
    head, waitingSection,
    h('section', { 'aria-labelledby': 'timeline-title' }, h('h2', { id: 'timeline-title' }, 'Timeline'), timeline),
    treeSection,
    h('section', { 'aria-labelledby': 'events-title' }, h('h2', { id: 'events-title' }, 'Live events'),
      h('p', { class: 'muted' }, 'Events of this run appear here as they happen.'), events));
  let runId = id;
  const load = coalesced(async () => {
    try {
      await loadTools();
      const t = await api(`/v1/runs/${enc(id)}/timeline`);
      runId = t.run.id;
      // The runs below this one (a child's page also says it is one).
      const top = await api(`/v1/runs/${enc(runId)}/tree`);
      treeSection.hidden = !top.children.length && !t.run.parent_run_id;
      tree.replaceChildren(treeView(top, runId));
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
  });
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
  // A run driven by another process comes on the same feed (`run` at each change).
}

export async function conversationPage(id, signal) {
  document.title = escapeHidden(`Conversation ${id} · toolgate`);
  const stats = h('div', {});
  const runs = h('div', {});
  const statusSel = h('select', { id: 'f-status' }, h('option', { value: '' }, 'All'),
    ['in_progress', 'requires_action', 'completed', 'incomplete', 'failed', 'cancelled'].map((s) => h('option', { value: s }, s.replaceAll('_', ' '))));
  const agentSel = h('select', { id: 'f-agent' }, h('option', { value: '' }, 'All'));
  const spend = h('div', {});
  main.replaceChildren(
    h('h1', {}, 'Conversation ', h('code', {}, id)),
    h('section', { 'aria-labelledby': 'stats-title' }, h('h2', { id: 'stats-title' }, 'Calls'), stats),
    h('section', { 'aria-labelledby': 'spend-title' }, h('h2', { id: 'spend-title' }, 'Tokens and cost'), spend),
    h('section', { 'aria-labelledby': 'runs-title' }, h('h2', { id: 'runs-title' }, 'Runs'),
      h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() },
        h('label', { for: 'f-status' }, 'Status'), statusSel,
        h('label', { for: 'f-agent' }, 'Agent'), agentSel),
      runs));
  const loadStats = async () => {
    try {
      const [s, calls] = await Promise.all([api(`/v1/conversations/${enc(id)}/stats`), recentCalls(`conversation_id=${enc(id)}`)]);
      const numbers = [
        ['Calls', s.total_calls], ['Succeeded', s.successful_calls], ['Failed', s.failed_calls],
        ['Denied', s.denied_calls], ['Client', s.client_calls], ['Success rate', `${s.success_rate}%`],
        ['p50', duration(s.duration_ms.p50)], ['p95', duration(s.duration_ms.p95)],
      ];
      stats.replaceChildren(
        numbersView(numbers),
        ...(s.total_calls ? [statsChart(s), overTimeChart(calls), latencyChart(calls)].filter(Boolean) : [h('p', { class: 'muted' }, 'No calls recorded yet.')]));
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
      loadSpend(list);
    } catch (e) {
      if (e.status !== 401) notice(`Could not read the runs: ${e.message}`);
    }
  };
  // Tokens and cost: the conversation's row of the spend report, and tokens per run.
  const loadSpend = async (list) => {
    try {
      const report = await api(`/v1/spend?conversation_id=${enc(id)}`);
      const row = report.rows[0];
      const cost = row ? `$${(row.cost_nanos / 1e9).toFixed(6)}` : '$0';
      const numbers = [['Model requests', row ? row.requests : 0], ['Prompt tokens', row ? row.prompt_tokens : 0],
        ['Completion tokens', row ? row.completion_tokens : 0], ['Cost', cost]];
      spend.replaceChildren(
        numbersView(numbers),
        tokensChart(list) || h('p', { class: 'muted' }, 'No tokens recorded for these runs.'));
    } catch (e) {
      if (e.status !== 401) spend.replaceChildren(h('p', { class: 'muted' }, e.message));
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
