// The console's pages beside the inbox: every run (filtered by status, agent,
// conversation and tenant; live), the tool catalogue, and one tool's stats with charts.
// Filters live in the address (`/runs?status=failed`), so a reload, a bookmark and the
// back button keep them.

import { h, enc, when, duration, badge, notice, coalesced } from './dom.js';
import { api, follow, recentCalls } from './api.js';
import { loadTools, me, tools, inLanguage } from './items.js';
import { runsTable, numbersView } from './pages.js';
import { overTimeChart, latencyChart, ratesChart } from './chart.js';

const main = document.getElementById('main');

// A filter form whose every change loads the page again with the filters in the query.
function filterForm(fields) {
  const params = new URLSearchParams(location.search);
  const go = () => {
    const next = new URLSearchParams();
    for (const [name] of fields) {
      const v = document.getElementById(`f-${name}`).value.trim();
      if (v) next.set(name, v);
    }
    const q = next.toString();
    location.assign(`${location.pathname}${q ? `?${q}` : ''}`);
  };
  const controls = fields.map(([name, label, options]) => {
    const value = params.get(name) || '';
    const control = options
      ? h('select', { id: `f-${name}`, onchange: go }, h('option', { value: '' }, 'All'),
        [...new Set([...options, ...(value ? [value] : [])])].map((o) => h('option', { value: o, selected: o === value }, o.replaceAll('_', ' '))))
      : h('input', { id: `f-${name}`, type: 'text', value, placeholder: 'any', onchange: go });
    return [h('label', { for: `f-${name}` }, label), control];
  });
  return h('form', { class: 'filters', role: 'search', onsubmit: (e) => { e.preventDefault(); go(); } }, controls);
}

const STATUSES = ['in_progress', 'requires_action', 'completed', 'incomplete', 'failed', 'cancelled'];

export async function runsListPage(signal) {
  document.title = 'Runs · toolgate';
  await loadTools().catch(() => {});
  const params = new URLSearchParams(location.search);
  let agents = [];
  try { agents = (await api('/v1/agents')).map((a) => a.name); } catch (e) { if (e.status === 401) return; }
  const admin = me.value && me.value.roles && me.value.roles.includes('admin');
  const fields = [['status', 'Status', STATUSES], ['agent', 'Agent', agents], ['conversation_id', 'Conversation']];
  if (admin) fields.push(['tenant', 'Tenant']);
  const list = h('div', { id: 'runs-list' });
  const count = h('span', { class: 'count' });
  main.replaceChildren(h('h1', {}, 'Runs ', count), filterForm(fields),
    h('p', { class: 'muted' }, 'Newest first; the list follows the runs live.'), list);
  const load = coalesced(async () => {
    const q = new URLSearchParams({ limit: '200' });
    for (const [name] of fields) if (params.get(name)) q.set(name, params.get(name));
    try {
      const runs = await api(`/v1/runs?${q}`);
      count.textContent = `(${runs.length})`;
      list.replaceChildren(runsTable(runs, 'Runs', { tenant: admin, model: true }));
    } catch (e) {
      if (e.status !== 401) list.replaceChildren(h('p', { class: 'error' }, e.message));
    }
  });
  load();
  follow('/v1/events', (name) => {
    if (name === 'open' || name === 'run' || name === 'lagged') load();
  }, signal);
}

// A tool's sandbox in a few words.
function sandboxText(s) {
  if (!s) return '—';
  if (s === 'off') return 'off';
  const bits = [];
  if (s.fs) bits.push(`fs ${s.fs}`);
  if (s.network !== undefined) bits.push(`network ${typeof s.network === 'string' ? s.network : JSON.stringify(s.network)}`);
  return bits.join(', ') || 'on';
}

function validationText(v) {
  if (!v) return h('span', { class: 'muted' }, 'never checked');
  return h('span', { class: v.valid ? 'ok' : 'error', title: v.reason || '' },
    `${v.valid ? 'valid' : 'invalid'} · ${when(v.checked_at)}`);
}

function toolName(t) {
  const label = t.label ? inLanguage(t.label) : null;
  return [t.icon && !t.icon.startsWith('data:') ? h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, t.icon) : null,
    t.icon && t.icon.startsWith('data:') ? h('img', { class: 'tool-icon', src: t.icon, alt: '', width: 16, height: 16 }) : null,
    h('a', { href: `/tools/${enc(t.name)}` }, t.name),
    label && label !== t.name ? h('span', { class: 'muted' }, ` ${label}`) : null];
}

export async function toolsPage(signal) {
  document.title = 'Tools · toolgate';
  // The catalogue is read again whenever the feed (re)connects (a server restarted
  // with other tools, say).
  follow('/v1/events', (name) => { if (name === 'open') showCatalogue(); }, signal);
}

async function showCatalogue() {
  let list;
  try {
    list = await api('/v1/tools');
  } catch (e) {
    if (e.status !== 401) main.replaceChildren(h('h1', {}, 'Tools'), h('p', { class: 'error' }, e.message));
    return;
  }
  const rows = list.map((t) => h('tr', {},
    h('td', {}, toolName(t)),
    h('td', {}, t.runs),
    h('td', {}, badge(t.permission)),
    h('td', {}, t.rules && t.rules.length ? h('ul', { class: 'rules' }, t.rules.map((r) => h('li', {}, h('code', {}, `${r.key}: ${r.rule}`)))) : '—'),
    h('td', {}, sandboxText(t.sandbox)),
    h('td', { class: 'origin' }, t.source),
    h('td', {}, validationText(t.validation))));
  main.replaceChildren(h('h1', {}, 'Tools ', h('span', { class: 'count' }, `(${list.length})`)),
    h('p', { class: 'muted' }, 'The tools this server offers (those your key may use). A tool\'s page has its stats.'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'runs catalogue' },
      h('caption', { class: 'sr-only' }, 'The tool catalogue'),
      h('thead', {}, h('tr', {}, ['Tool', 'Runs as', 'Permission', 'Rules', 'Sandbox', 'Origin', 'Last validation'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows))));
}

export async function toolPage(name, signal) {
  document.title = `${name} · Tools · toolgate`;
  const facts = h('div', {});
  const numbers = h('div', {});
  const charts = h('div', { class: 'charts' });
  const recent = h('div', {});
  main.replaceChildren(h('h1', {}, 'Tool ', h('code', {}, name)), facts,
    h('section', { 'aria-labelledby': 'tool-stats' }, h('h2', { id: 'tool-stats' }, 'Calls'), numbers, charts),
    h('section', { 'aria-labelledby': 'tool-recent' }, h('h2', { id: 'tool-recent' }, 'Recent calls'), recent));
  await loadTools().catch(() => {});
  const t = tools.get(name);
  if (t) {
    facts.replaceChildren(h('dl', { class: 'facts' }, [
      ['Description', t.description], ['Runs as', t.runs], ['Permission', badge(t.permission)],
      ['Read-only', t.read_only ? 'yes' : 'no'], ['Sandbox', sandboxText(t.sandbox)], ['Origin', t.source],
      ['Last validation', validationText(t.validation)],
    ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
  }
  const load = coalesced(async () => {
    try {
      const [s, calls] = await Promise.all([api(`/v1/tools/${enc(name)}/stats`), recentCalls(`tool=${enc(name)}`)]);
      const rows = [['Calls', s.total_calls], ['Succeeded', s.successful_calls], ['Failed', s.failed_calls],
        ['Denied', s.denied_calls], ['Success rate', `${s.success_rate}%`],
        ['p50', duration(s.duration_ms.p50)], ['p95', duration(s.duration_ms.p95)]];
      if (s.cache) rows.push(['Cache hits', `${s.cache.hits} (${s.cache.hit_rate}%)`]);
      numbers.replaceChildren(numbersView(rows));
      charts.replaceChildren(...(s.total_calls ? [ratesChart(s), overTimeChart(calls), latencyChart(calls)].filter(Boolean)
        : [h('p', { class: 'muted' }, 'No calls recorded yet.')]));
      recent.replaceChildren(callsTable(calls.slice(0, 20)));
    } catch (e) {
      if (e.status === 404) numbers.replaceChildren(h('p', { class: 'muted' }, e.message));
      else if (e.status !== 401) notice(`Could not read the tool's stats: ${e.message}`);
    }
  });
  load();
  // A call ends inside a run: each change of a run (`run` on the feed, from any
  // process) may have recorded one.
  follow('/v1/events', (ev, data) => {
    if (ev === 'open' || ev === 'run' || ev === 'lagged' || (ev === 'tool.finished' && data && data.tool === name)) load();
  }, signal);
}

export function callsTable(calls) {
  if (!calls.length) return h('p', { class: 'muted' }, 'None yet.');
  return h('div', { class: 'table-wrap' }, h('table', { class: 'runs' },
    h('caption', { class: 'sr-only' }, 'Recent calls'),
    h('thead', {}, h('tr', {}, ['Started', 'Status', 'Duration', 'Run', 'Conversation'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, calls.map((c) => h('tr', {},
      h('td', {}, when(c.started_at)), h('td', {}, badge(c.status)), h('td', {}, duration(c.duration_ms)),
      h('td', {}, c.run_id ? h('a', { href: `/runs/${enc(c.run_id)}` }, c.run_id) : '—'),
      h('td', {}, h('a', { href: `/conversations/${enc(c.conversation_id)}` }, c.conversation_id)))))));
}
