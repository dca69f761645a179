// Browser scenarios for the approval inbox, in Debian's headless Chromium driven by
// playwright-core. Run by tests/inbox_browser.rs: `node inbox.mjs SCENARIO` with
// TOOLGATE_URL (a running `toolgate serve`), TOOLGATE_KEY (when the server has one),
// PLAYWRIGHT_MODULES (the node_modules of tests/browser/setup.sh) and ARTIFACTS (the
// folder for screenshots). Exits non-zero with the reason on stderr when a check fails.

import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';

const require = createRequire(join(process.env.PLAYWRIGHT_MODULES, 'x.js'));
const { chromium } = require('playwright-core');

const BASE = process.env.TOOLGATE_URL;
const KEY = process.env.TOOLGATE_KEY || '';
// Where the browser loads the page from: the server, or the relay in front of it.
let SITE = BASE;
const ARTIFACTS = process.env.ARTIFACTS;
const scenario = process.argv[2];
const WAIT = 30000;

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
}

// The API, as another program (or person) uses it beside the page.
async function api(path, body) {
  const headers = { 'Content-Type': 'application/json' };
  if (KEY) headers.Authorization = `Bearer ${KEY}`;
  const r = await fetch(BASE + path, body === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

// The keys of the identities scenarios (TOOLGATE_KEYS: a JSON object of name -> key).
const KEYS = JSON.parse(process.env.TOOLGATE_KEYS || '{}');

// A run started with another key than the page's.
async function startRunAs(key, input, agent = 'assistant') {
  const r = await fetch(BASE + '/v1/runs', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
    body: JSON.stringify({ agent, input }),
  });
  const body = await r.json();
  check(r.status === 200, `POST /v1/runs answered ${r.status}: ${JSON.stringify(body)}`);
  check(body.status === 'requires_action', `the run paused (${body.status})`);
  return body;
}

// The page acts with `key` (kept for the session, as if typed into the key form).
async function useKey(page, key) {
  await page.addInitScript((k) => sessionStorage.setItem('toolgate.key', k), key);
}

async function startRun(input, agent = 'assistant') {
  const r = await api('/v1/runs', { agent, input });
  check(r.status === 200, `POST /v1/runs answered ${r.status}: ${JSON.stringify(r.body)}`);
  check(r.body.status === 'requires_action', `the run paused (${r.body.status})`);
  return r.body;
}

async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

// The waiting item for a call: one element with the tool's name and call id in it.
function item(page, run, tool, callId) {
  return page.locator(`article.item[data-run="${run.id}"]`).filter({ hasText: tool }).filter({ hasText: callId });
}

function button(scope, name) {
  return scope.getByRole('button', { name, exact: true });
}

async function openInbox(page) {
  await page.goto(SITE + '/');
  await page.getByRole('heading', { name: /Waiting for you/ }).waitFor({ timeout: WAIT });
  await page.locator('#live.on').waitFor({ timeout: WAIT });
}

// A relay in front of the server that counts the browser's open /v1/events streams:
// each one holds a connection of the six the browser gives a host over HTTP/1.1.
async function streamCounter() {
  const to = new URL(BASE);
  const agent = new http.Agent({ keepAlive: true });
  const counter = { open: 0, opened: 0 };
  const relay = http.createServer((req, res) => {
    const up = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
    res.on('close', () => up.destroy());
    if (req.url.startsWith('/v1/events')) {
      counter.open += 1;
      counter.opened += 1;
      res.on('close', () => { counter.open -= 1; });
    }
  });
  await new Promise((ok) => relay.listen(0, '127.0.0.1', ok));
  counter.url = `http://127.0.0.1:${relay.address().port}`;
  counter.close = () => { relay.closeAllConnections(); relay.close(); agent.destroy(); };
  return counter;
}

async function until(test, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > end) throw new Error(`check failed: ${what}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

const scenarios = {
  // A run paused by another process (the CLI, on the server's database: TOOLGATE_BIN
  // and TOOLGATE_SITE) appears without a reload and sooner than any re-read: the
  // server's change feed carries it.
  async elsewhere(page, nav) {
    await openInbox(page);
    const site = process.env.TOOLGATE_SITE;
    const cli = spawnSync(process.env.TOOLGATE_BIN, [
      '--db', join(site, 'toolgate.db'), 'run', '--agent', join(site, 'agents/assistant.yaml'),
      '--tools', join(site, 'tools'), '--workspace', join(site, 'ws'), '--json', 'Work out 2+3*4 and save it.',
    ], { encoding: 'utf8' });
    check(cli.status === 3, `the CLI's run paused (exit ${cli.status}): ${cli.stderr}`);
    const run = JSON.parse(cli.stdout.trim().split('\n').pop());
    const write = item(page, run, 'write_file', 'call_write');
    await write.waitFor({ timeout: 3000 });
    check(nav.count === 1, `the item appeared without a reload (${nav.count} navigations)`);
    await shot(page, 'inbox-elsewhere');
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // An approver of tenant A sees A's waiting item, with its buttons, and not B's.
  async tenants(page) {
    await useKey(page, KEYS.a_approver);
    await openInbox(page);
    const b = await startRunAs(KEYS.b_client, 'Work out 2+3*4 and save it.');
    const a = await startRunAs(KEYS.a_client, 'Work out 2+3*4 and save it.');
    const mine = item(page, a, 'write_file', 'call_write');
    await mine.waitFor({ timeout: WAIT });
    check(await page.locator(`article.item[data-run="${b.id}"]`).count() === 0, "B's items are not on A's page");
    check(await page.locator(`#recent tr[data-run="${b.id}"]`).count() === 0, "B's run is not in A's recent runs");
    check(await button(mine, 'Approve').isVisible(), "A's approver has Approve on A's item");
    const ask = item(page, a, 'ask_user', 'call_ask');
    await ask.locator('.why-not').filter({ hasText: 'approver key' }).waitFor({ timeout: WAIT });
    await shot(page, 'tenants-approver-a');
    await button(mine, 'Approve').click();
    await mine.waitFor({ state: 'detached', timeout: WAIT });
    const direct = await page.goto(SITE + `/runs/${b.id}`);
    check(direct.status() === 200, 'the run page loads (it holds no data)');
    await page.getByText(/no run|not found|There is no run/i).first().waitFor({ timeout: WAIT });
    await shot(page, 'tenants-other-run');
    console.log(JSON.stringify({ run_id: a.id, other: b.id }));
  },

  // A client-role key sees its tenant's waiting items, and no Approve button: the
  // page says why.
  async client_view(page) {
    await useKey(page, KEYS.a_client);
    await openInbox(page);
    const a = await startRunAs(KEYS.a_client, 'Work out 2+3*4 and save it.');
    const write = item(page, a, 'write_file', 'call_write');
    await write.waitFor({ timeout: WAIT });
    check(await button(write, 'Approve').count() === 0, 'a client key has no Approve button');
    check(await button(write, 'Deny').count() === 0, 'a client key has no Deny button');
    await write.locator('.why-not').filter({ hasText: 'client key' }).waitFor({ timeout: WAIT });
    const ask = item(page, a, 'ask_user', 'call_ask');
    check(await button(ask, 'Submit').isVisible(), 'the client answers its client tool');
    await shot(page, 'client-view');
    console.log(JSON.stringify({ run_id: a.id }));
  },

  // four_eyes: the person who started the run sees, in place of the buttons, that
  // someone else must approve; another approver approves.
  async four_eyes(page) {
    await useKey(page, KEYS.ann_approver);
    await openInbox(page);
    const run = await startRunAs(KEYS.ann_client, 'Work out 2+3*4 and save it.', 'ledger');
    const write = item(page, run, 'write_file', 'call_write');
    await write.waitFor({ timeout: WAIT });
    check(await button(write, 'Approve').count() === 0, 'the starter has no Approve button');
    await write.locator('.why-not').filter({ hasText: 'Four eyes' }).waitFor({ timeout: WAIT });
    await shot(page, 'four-eyes');
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // A run pauses while the page is open: its items appear without a reload; Approve
  // and Submit resolve them; the run completes and the page says so; the run's page
  // shows the timeline, the conversation's page the stats.
  async approve(page, nav) {
    await openInbox(page);
    await shot(page, 'inbox-empty');
    await page.getByLabel('Your name').fill('Ada');
    await page.getByLabel('Your name').press('Tab');
    const run = await startRun('Work out 2+3*4 and save it.');
    const write = item(page, run, 'write_file', 'call_write');
    const ask = item(page, run, 'ask_user', 'call_ask');
    await write.waitFor({ timeout: WAIT });
    await ask.waitFor({ timeout: WAIT });
    check(nav.count === 1, `the items appeared without a reload (${nav.count} navigations)`);
    check((await write.textContent()).includes('result.txt'), 'the arguments are shown');
    check(await button(write, 'Approve always').isVisible(), 'Approve always is there');
    check(await button(write, 'Edit').isVisible(), 'Edit is there');
    await shot(page, 'inbox-waiting');
    await button(write, 'Approve').click();
    await write.waitFor({ state: 'detached', timeout: WAIT });
    await ask.getByLabel(/Output of ask_user/).fill('Blue');
    await button(ask, 'Submit').click();
    await ask.waitFor({ state: 'detached', timeout: WAIT });
    const row = page.locator(`#recent tr[data-run="${run.id}"]`);
    await row.filter({ hasText: 'completed' }).waitFor({ timeout: WAIT });
    check(nav.count === 1, 'the run completed on the page without a reload');
    await shot(page, 'inbox-done');

    await row.getByRole('link', { name: run.id }).click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor({ timeout: WAIT });
    await page.locator('.facts').filter({ hasText: 'completed' }).waitFor({ timeout: WAIT });
    const timeline = page.locator('.timeline');
    await timeline.filter({ hasText: 'Done. 2+3*4 is 14' }).waitFor({ timeout: WAIT });
    const callWrite = timeline.locator('li.call').filter({ hasText: 'call_write' });
    await callWrite.locator('summary').click();
    await callWrite.filter({ hasText: /approved by local \(as Ada\) at/ }).waitFor({ timeout: WAIT });
    const callAsk = timeline.locator('li.call').filter({ hasText: 'call_ask' });
    await callAsk.locator('summary').click();
    await callAsk.filter({ hasText: 'Blue' }).waitFor({ timeout: WAIT });
    await shot(page, 'run-page');

    await page.locator('.facts').getByRole('link', { name: run.conversation_id }).click();
    await page.locator('svg.chart').first().waitFor({ timeout: WAIT });
    const numbers = await page.locator('dl.numbers').first().textContent();
    check(numbers.includes('Calls3'), `the stats count 3 calls: ${numbers}`);
    const label = await page.locator('svg.chart').first().getAttribute('aria-label');
    check(label.includes('calculator 1') && label.includes('write_file 1'), `the chart has the calls per tool: ${label}`);
    await page.locator('table.runs').filter({ hasText: run.id }).waitFor({ timeout: WAIT });
    await page.getByLabel('Status').selectOption('failed');
    await page.getByText('No runs.').waitFor({ timeout: WAIT });
    await page.getByLabel('Status').selectOption('completed');
    await page.getByLabel('Agent').selectOption('assistant');
    await page.locator('table.runs').filter({ hasText: run.id }).waitFor({ timeout: WAIT });
    await shot(page, 'conversation-page');
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // A call held by a rule on its arguments: its card names the rule that asked and
  // the deadline, as text (hidden characters escaped); Approve still resolves it.
  async reason(page) {
    await openInbox(page);
    const run = await startRun('Pay the supplier.', 'finance');
    const card = item(page, run, 'transfer', 'call_pay');
    await card.waitFor({ timeout: WAIT });
    const rule = await card.locator('.reason').textContent();
    check(rule.includes('confirm_if: args.amount > 1000'), `the card names the rule (${rule})`);
    const deadline = await card.locator('.deadline').textContent();
    check(deadline.includes('then the call is denied'), `the card gives the deadline (${deadline})`);
    await shot(page, 'inbox-reason');
    await button(card, 'Approve').click();
    await card.waitFor({ state: 'detached', timeout: WAIT });
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // Deny with a reason, by the keyboard on the focused item; then the client output.
  async deny(page) {
    await openInbox(page);
    const run = await startRun('Save 14 somewhere.');
    const write = item(page, run, 'write_file', 'call_write');
    await write.waitFor({ timeout: WAIT });
    await write.focus();
    await page.keyboard.press('d');
    const reason = write.getByLabel('Reason (the model reads it)');
    await reason.waitFor({ timeout: WAIT });
    check(await reason.evaluate((el) => el === document.activeElement), 'the reason field has the focus');
    await page.keyboard.type('Not in this folder, please.');
    await shot(page, 'deny-reason');
    await button(write, 'Deny').click();
    await write.waitFor({ state: 'detached', timeout: WAIT });
    // The rest on the run's page: decided there, its live events shown as they come.
    const ask = item(page, run, 'ask_user', 'call_ask');
    await ask.getByRole('link', { name: run.id }).click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor({ timeout: WAIT });
    await page.locator('.timeline li.call').filter({ hasText: 'call_write' }).filter({ hasText: 'denied' }).waitFor({ timeout: WAIT });
    await page.locator('#live.on').waitFor({ timeout: WAIT });
    const there = item(page, run, 'ask_user', 'call_ask');
    await there.getByLabel(/Output of ask_user/).fill('Green');
    await button(there, 'Submit').click();
    await page.locator('ol.events').filter({ hasText: 'run.completed' }).waitFor({ timeout: WAIT });
    await page.locator('.facts').filter({ hasText: 'completed' }).waitFor({ timeout: WAIT });
    await page.locator('.timeline').filter({ hasText: 'Done. 2+3*4 is 14' }).waitFor({ timeout: WAIT });
    await shot(page, 'run-live');
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // Edited arguments: not JSON (nothing sent), then refused by the server (its error
  // next to the field, nothing changed); then a decision that lost a race.
  async edit(page) {
    const posts = [];
    page.on('request', (r) => { if (r.method() === 'POST') posts.push(r.url()); });
    await openInbox(page);
    const run = await startRun('Save 14.');
    const write = item(page, run, 'write_file', 'call_write');
    await write.waitFor({ timeout: WAIT });
    await button(write, 'Edit').click();
    const field = write.getByLabel('Arguments (JSON)');
    await field.fill('{"path": "x.txt",');
    await button(write, 'Approve').click();
    await write.locator('.field-error').filter({ hasText: 'Not valid JSON' }).waitFor({ timeout: WAIT });
    check(posts.length === 0, `nothing was sent for text that is not JSON (${posts})`);
    await field.fill('{"path": "x.txt"}');
    await button(write, 'Approve').click();
    const error = write.locator('.field-error');
    await error.filter({ hasText: "'content': is required" }).waitFor({ timeout: WAIT });
    check(posts.length === 1, `one request, refused by the server (${posts})`);
    check(await field.getAttribute('aria-invalid') === 'true', 'the field is marked invalid');
    const described = await field.getAttribute('aria-describedby');
    check(described === await error.getAttribute('id'), 'the error is tied to the field');
    await shot(page, 'edit-invalid');
    const after = await api(`/v1/runs/${run.id}`);
    check(after.body.status === 'requires_action', 'the run still waits');
    const items = after.body.required_action.items;
    check(items.length === 2 && JSON.stringify(items[0].arguments) === JSON.stringify(run.required_action.items[0].arguments),
      `nothing changed: ${JSON.stringify(items)}`);

    // Someone else denies it through the API; this page's Approve then loses.
    await button(write, 'Cancel').click();
    const other = await api(`/v1/runs/${run.id}/deny`, { call_id: 'call_write', reason: 'decided elsewhere' });
    check(other.status === 200, `the other decision went through (${other.status})`);
    await button(write, 'Approve').click();
    await page.locator('#notices').filter({ hasText: 'someone else already decided it' }).waitFor({ timeout: WAIT });
    await shot(page, 'race-lost');
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // With a key set: the page asks for it, shows nothing without it, refuses a wrong
  // one, and works with the right one (kept for the session: a reload does not ask).
  async key(page, nav) {
    await page.goto(BASE + '/');
    const form = page.locator('#key-form');
    await form.waitFor({ timeout: WAIT });
    check(await page.locator('article.item, table.runs').count() === 0, 'nothing loads without the key');
    await page.getByLabel('API key').fill('wrong-key');
    await button(page, 'Use key').click();
    await form.getByText('That key was refused').waitFor({ timeout: WAIT });
    await shot(page, 'key-asked');
    await page.getByLabel('API key').fill(KEY);
    await button(page, 'Use key').click();
    await page.getByRole('heading', { name: /Waiting for you/ }).waitFor({ timeout: WAIT });
    await page.locator('#live.on').waitFor({ timeout: WAIT });
    const run = await startRun('Save 14.');
    await item(page, run, 'write_file', 'call_write').waitFor({ timeout: WAIT });
    await page.reload();
    await item(page, run, 'write_file', 'call_write').waitFor({ timeout: WAIT });
    check(await form.count() === 0, 'the key is kept for the session');
    check(nav.count === 2, `one load and one reload (${nav.count})`);
    // The keyboard: `a` on the focused item approves it.
    const write = item(page, run, 'write_file', 'call_write');
    await write.focus();
    await page.keyboard.press('a');
    await write.waitFor({ state: 'detached', timeout: WAIT });
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // A secret argument reads [secret] everywhere on the page; a long one is folded.
  // An authorization item: a Connect link to its consent URL (PKCE, state), opened
  // apart, and nothing to decide; a budget item: what was spent, "Raise and continue".
  async consent_budget(page) {
    await useKey(page, KEY);
    await openInbox(page);
    const run = await startRun('What is on my calendar?', 'planner');
    const card = item(page, run, 'calendar_me', 'call_me');
    await card.waitFor({ timeout: WAIT });
    check((await card.locator('.badge').textContent()) === 'needs consent', 'the badge says it needs consent');
    const link = card.locator('a.connect');
    check((await link.textContent()) === 'Connect calendar', 'the link names the provider');
    const href = await link.getAttribute('href');
    check(href === run.required_action.items[0].arguments.consent_url, 'the link is the item\'s consent URL');
    check(href.startsWith('https://calendar.example/authorize?') && href.includes('code_challenge=') && href.includes('state='), `a PKCE consent URL: ${href}`);
    check((await link.getAttribute('target')) === '_blank' && (await link.getAttribute('rel')).includes('noopener'), 'opened apart, without an opener');
    check((await card.locator('button, textarea').count()) === 0, 'nothing to decide or submit on a consent item');

    const spend = await startRun('Spend.', 'spender');
    const held = spend.required_action.items[0];
    check(held.kind === 'budget', `the run paused on its budget (${held.kind})`);
    const budget = item(page, spend, held.tool, held.call_id);
    await budget.waitFor({ timeout: WAIT });
    check((await budget.locator('.badge').textContent()) === 'budget reached', 'the badge says the budget was reached');
    check((await budget.locator('.reason').textContent()).includes('approve to raise it'), 'the reason says what approving does');
    check((await button(budget, 'Approve always').count()) === 0, 'a budget is raised for this run only');
    check((await budget.locator('textarea:visible').count()) === 0, 'no output form on a budget item');
    await shot(page, 'consent-and-budget');
    await button(budget, 'Raise and continue').click();
    await page.locator(`#recent tr[data-run="${spend.id}"]`).filter({ hasText: 'completed' }).waitFor({ timeout: WAIT });
    check((await card.count()) === 1, 'the consent item still waits');
  },

  async secrets(page) {
    await openInbox(page);
    const run = await startRun('Send the note.', 'vault');
    const note = item(page, run, 'send_note', 'call_note');
    await note.waitFor({ timeout: WAIT });
    check(await note.locator('.secret').filter({ hasText: '[secret]' }).count() === 1, 'the token reads [secret]');
    const fold = note.locator('details.fold');
    check(await fold.count() === 1, 'the long text is folded');
    check(!(await fold.evaluate((d) => d.open)), 'folded until asked');
    check((await fold.locator('summary').textContent()).includes('characters'), 'the fold says how long it is');
    check(!(await page.content()).includes('tok-very-secret-123'), 'the token never shows in the inbox');
    const title = note.locator('h3');
    check((await title.locator('.label').textContent()).trim() === 'Send a note', 'the card shows the tool\'s label');
    check((await title.locator('.toolname').textContent()) === 'send_note', 'and its name beside it');
    const icon = title.locator('img.tool-icon');
    check((await icon.getAttribute('src')).startsWith('data:image/svg+xml;base64,'), 'the icon is inline, from the file beside the tool');
    check(await icon.evaluate((i) => i.complete && i.naturalWidth > 0), 'the icon is drawn');
    check((await note.locator('.help').textContent()).includes('people you know'), 'the card shows the tool\'s help');
    await shot(page, 'secrets-folded');
    await fold.locator('summary').click();
    await fold.locator('pre').filter({ hasText: 'line 12 of the note' }).waitFor({ timeout: WAIT });
    await button(note, 'Approve').click();
    await page.locator(`#recent tr[data-run="${run.id}"]`).filter({ hasText: 'completed' }).waitFor({ timeout: WAIT });
    await page.goto(`${BASE}/runs/${run.id}`);
    const call = page.locator('.timeline li.call').filter({ hasText: 'call_note' });
    await call.waitFor({ timeout: WAIT });
    await call.locator('summary').first().click();
    await call.locator('.secret').first().waitFor({ timeout: WAIT });
    check(!(await page.content()).includes('tok-very-secret-123'), 'the token never shows on the run page');
    await shot(page, 'secrets-run-page');
  },

  // Twenty navigations in one tab, by links and by back/forward with the back/forward
  // cache on: after each, the page in front loads and is live, and the browser holds
  // one event stream open (a cached page holds none; it starts again when restored,
  // showing what changed meanwhile). Then an Approve and a Submit still go through.
  async bfcache(page, nav, counter) {
    // Whether the page in front was last shown from the back/forward cache.
    await page.addInitScript(() => addEventListener('pageshow', (e) => { window.__fromCache = e.persisted; }));
    const run = await startRun('Work out 2+3*4 and save it.');
    await openInbox(page);
    const runLink = `a[href="/runs/${run.id}"]`;
    const convLink = `a[href="/conversations/${run.conversation_id}"]`;
    const kinds = {
      inbox: { path: '/', ready: () => item(page, run, 'write_file', 'call_write') },
      run: { path: `/runs/${run.id}`, ready: () => page.locator('.facts').filter({ hasText: run.conversation_id }) },
      conversation: { path: `/conversations/${run.conversation_id}`, ready: () => page.locator('table.runs').filter({ hasText: run.id }) },
    };
    const clicks = {
      inbox: () => page.locator('header nav').getByRole('link', { name: 'Inbox' }).click(),
      run: () => page.locator(runLink).first().click(),
      conversation: () => page.locator(convLink).first().click(),
    };
    const steps = ['run', 'conversation', 'run', 'inbox', 'conversation', 'run', 'conversation', 'inbox',
      'back', 'back', 'back', 'forward', 'forward', 'run', 'conversation', 'back', 'forward', 'inbox', 'back', 'forward'];
    const history = ['inbox'];
    let at = 0;
    let restored = 0;
    let later = null;
    for (const [i, step] of steps.entries()) {
      if (step === 'back' || step === 'forward') {
        at += step === 'back' ? -1 : 1;
        // The last step returns to the inbox: a run paused meanwhile must show there.
        if (i === steps.length - 1) later = await startRun('Save 14 again.');
        await (step === 'back' ? page.goBack({ waitUntil: 'commit' }) : page.goForward({ waitUntil: 'commit' }));
      } else {
        await clicks[step]();
        history.splice(at + 1, history.length, step);
        at += 1;
      }
      const kind = kinds[history[at]];
      const what = `navigation ${i + 1} (${step}, to the ${history[at]} page)`;
      await page.waitForURL((u) => u.pathname === kind.path, { timeout: WAIT, waitUntil: 'commit' });
      await kind.ready().waitFor({ timeout: WAIT });
      await page.locator('#live.on').waitFor({ timeout: WAIT });
      await until(() => counter.open === 1, `after ${what} the browser holds one event stream open, not ${counter.open}`);
      if (step === 'back' || step === 'forward') {
        if (await page.evaluate(() => window.__fromCache)) restored += 1;
        else console.error(`${what}: not restored from the back/forward cache: ${JSON.stringify(await page.evaluate(() => performance.getEntriesByType('navigation')[0].notRestoredReasons))}`);
      }
    }
    const moves = steps.filter((s) => s === 'back' || s === 'forward').length;
    check(restored >= moves / 2, `the back/forward cache was used (${restored} of ${moves} pages restored from it)`);
    check(counter.opened > steps.length, `every page opened its stream (${counter.opened} in all)`);
    await shot(page, 'bfcache-inbox');
    await item(page, later, 'write_file', 'call_write').waitFor({ timeout: WAIT });
    const write = item(page, run, 'write_file', 'call_write');
    await button(write, 'Approve').click();
    await write.waitFor({ state: 'detached', timeout: WAIT });
    const ask = item(page, run, 'ask_user', 'call_ask');
    await ask.getByLabel(/Output of ask_user/).fill('Blue');
    await button(ask, 'Submit').click();
    await ask.waitFor({ state: 'detached', timeout: WAIT });
    check(counter.open === 1, `still one event stream open (${counter.open})`);
    console.log(JSON.stringify({ run_id: run.id }));
  },

  // Hidden characters from the model (a right-to-left override in a path, a zero-width
  // space in a call id) show escaped and marked, under a warning badge; an ordinary
  // call has neither. Edit shows them as JSON escapes and sends them back unchanged.
  async hidden(page) {
    await openInbox(page);
    const plain = await startRun('Save 14.');
    const invoice = await startRun('Save the invoice.', 'courier');
    const card = page.locator(`article.item[data-run="${invoice.id}"]`);
    await card.waitFor({ timeout: WAIT });
    const args = await card.locator('.args').innerText();
    check(args.includes('invoice\\u202egnp.exe'), `the path reads with its override escaped: ${args}`);
    const text = await card.innerText();
    check(!/[\u202e\u200b]/.test(text), `no hidden character is left as it is on the card: ${JSON.stringify(text)}`);
    const mark = card.locator('.args .hidden-char');
    check(await mark.count() === 1 && await mark.textContent() === '\\u202e', 'the override is marked where it stands');
    check((await mark.getAttribute('title')).includes('right-to-left override'), 'the mark names the character');
    const callId = await card.locator('code.callid').innerText();
    check(callId === 'call\\u200b_invoice', `the call id shows its zero-width space: ${callId}`);
    const badge = card.locator('.badge.hidden-chars');
    check(await badge.isVisible() && (await badge.textContent()).includes('hidden characters'), 'the card carries the warning badge');
    check(await card.locator('.hidden-note').isVisible(), 'the card says what the badge means');
    const write = item(page, plain, 'write_file', 'call_write');
    await write.waitFor({ timeout: WAIT });
    check(await write.locator('.badge.hidden-chars, .hidden-note, .hidden-char').count() === 0, 'an ordinary call has no badge');
    await card.scrollIntoViewIfNeeded();
    await shot(page, 'hidden-characters');

    await button(card, 'Edit').click();
    const field = card.getByLabel('Arguments (JSON)');
    const json = await field.inputValue();
    check(json.includes('"invoice\\u202egnp.exe"') && !json.includes('\u202e'), `the editor shows the escape: ${json}`);
    await button(card, 'Approve').click();
    await card.waitFor({ state: 'detached', timeout: WAIT });

    await page.goto(`${SITE}/runs/${invoice.id}`);
    const call = page.locator('.timeline li.call').filter({ hasText: 'call\\u200b_invoice' });
    await call.waitFor({ timeout: WAIT });
    check(await call.locator('summary .badge.hidden-chars').count() === 1, 'the timeline marks the call too');
    await call.locator('summary').first().click();
    await call.locator('.args').first().filter({ hasText: 'invoice\\u202egnp.exe' }).waitFor({ timeout: WAIT });
    check(!(await page.locator('main').innerText()).includes('\u202e'), 'no override is left as it is on the run page');
    check(!(await call.innerText()).includes('(cut;'), 'a whole result (with a 3-byte character) is not said to be cut');
    await shot(page, 'hidden-characters-run-page');
    console.log(JSON.stringify({ run_id: invoice.id, plain_id: plain.id }));
  },

  // The console: every run (filtered in the address, live), a run's timeline with its
  // reasoning and tree of child runs, a conversation's and a tool's charts, and the
  // tool catalogue; each page reached by keyboard from the nav, one screenshot each.
  async console(page, nav) {
    const tree = await api('/v1/runs', { agent: 'planner', input: 'Work out 6*7 with the helper.' });
    check(tree.status === 200 && tree.body.status === 'completed', `the planner's run completed: ${JSON.stringify(tree.body)}`);
    const spent = await api(`/v1/spend?conversation_id=${tree.body.conversation_id}`);
    check(spent.body.rows.length === 1 && spent.body.rows[0].prompt_tokens === 280, `one conversation's spend: ${JSON.stringify(spent.body)}`);
    check((await api('/v1/spend?conversation_id=conv_none')).body.rows.length === 0, 'no spend, no row');
    const done = await startRun('Work out 2+3*4 and save it.');
    check((await api(`/v1/runs/${done.id}/approve`, { call_id: 'call_write' })).status === 200, 'approved');
    const submitted = await api(`/v1/runs/${done.id}/submit`, { call_id: 'call_ask', output: 'Blue' });
    check(submitted.status === 200 && submitted.body.status === 'completed', `the run completed: ${JSON.stringify(submitted.body)}`);
    const paused = await startRun('Work out 2+3*4 and save it.');

    // Runs: every run, then only the paused ones (in the address); a new paused run
    // appears live; back returns to the unfiltered list.
    await page.goto(SITE + '/');
    await page.locator('#live.on').waitFor({ timeout: WAIT });
    for (let i = 0; i < 8 && !(await page.evaluate(() => document.activeElement && document.activeElement.textContent === 'Runs')); i += 1) {
      await page.keyboard.press('Tab');
    }
    check(await page.evaluate(() => document.activeElement.textContent === 'Runs'), 'the Runs link is reached by keyboard');
    await page.keyboard.press('Enter');
    await page.waitForURL(SITE + '/runs');
    await page.locator(`#runs-list tr[data-run="${paused.id}"]`).waitFor({ timeout: WAIT });
    check(await page.locator(`#runs-list tr[data-run="${tree.body.id}"]`).count() === 1, 'the planner run is listed');
    await page.locator('#f-status').focus();
    await page.keyboard.press('Tab');
    check(await page.evaluate(() => document.activeElement.id === 'f-agent'), 'the filters are reached by keyboard');
    await page.locator('#f-status').selectOption('requires_action');
    await page.waitForURL(/\/runs\?status=requires_action$/);
    await page.locator(`#runs-list tr[data-run="${paused.id}"]`).waitFor({ timeout: WAIT });
    check(await page.locator(`#runs-list tr[data-run="${done.id}"]`).count() === 0, 'a completed run is filtered out');
    await page.locator('#live.on').waitFor({ timeout: WAIT });
    const before = nav.count;
    const later = await startRun('Work out 2+3*4 and save it.');
    await page.locator(`#runs-list tr[data-run="${later.id}"]`).waitFor({ timeout: WAIT });
    check(nav.count === before, 'the new run appeared without a reload');
    await shot(page, 'console-runs');
    await page.goBack();
    await page.waitForURL(SITE + '/runs');
    await page.locator(`#runs-list tr[data-run="${done.id}"]`).waitFor({ timeout: WAIT });
    check(await page.locator('#f-status').inputValue() === '', 'back shows the unfiltered list again');

    // A run's page: its reasoning, its calls, and the tree with the helper's run.
    await page.goto(SITE + `/runs/${tree.body.id}`);
    await page.locator('ul.tree li li').filter({ hasText: 'helper' }).waitFor({ timeout: WAIT });
    await page.locator('details.reasoning').first().waitFor({ timeout: WAIT });
    await page.locator('details.reasoning summary').first().click();
    await page.locator('details.reasoning pre').filter({ hasText: 'The helper can multiply.' }).waitFor({ timeout: WAIT });
    await page.locator('li.call').filter({ hasText: 'helper' }).first().waitFor({ timeout: WAIT });
    await shot(page, 'console-run');

    // A conversation's charts: calls per tool, over time, latency; tokens and cost.
    await page.goto(SITE + `/conversations/${done.conversation_id}`);
    await page.locator('svg.chart').nth(2).waitFor({ timeout: WAIT });
    const labels = await page.locator('svg.chart').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    check(labels.some((l) => l.startsWith('Calls over time')), `a calls-over-time chart: ${labels}`);
    check(labels.some((l) => l.startsWith('Latency of')), `a latency chart: ${labels}`);
    await page.locator('#spend-title').waitFor({ timeout: WAIT });
    await page.getByText('Model requests').waitFor({ timeout: WAIT });
    await shot(page, 'console-conversation');

    // The catalogue, then a tool's page with its charts, updated live by a new call.
    await page.goto(SITE + '/tools');
    const row = page.locator('table.catalogue tr').filter({ hasText: 'write_file' });
    await row.waitFor({ timeout: WAIT });
    check((await row.textContent()).includes('confirm'), 'the catalogue shows the permission');
    check(await page.locator('table.catalogue tr').filter({ hasText: 'nap' }).count() === 1, 'the site tools are listed');
    const pay = page.locator('table.catalogue tr').filter({ hasText: 'pay' });
    check((await pay.textContent()).includes('confirm_if: args.amount > 100'), 'the catalogue shows a tool\'s rules');
    await shot(page, 'console-tools');
    await row.getByRole('link', { name: 'write_file' }).click();
    await page.waitForURL(SITE + '/tools/write_file');
    await page.locator('svg.chart').nth(2).waitFor({ timeout: WAIT });
    const calls = await page.locator('dl.numbers dd').first().textContent();
    await page.locator('#live.on').waitFor({ timeout: WAIT });
    check((await api(`/v1/runs/${paused.id}/deny`, { call_id: 'call_write', reason: 'not now' })).status === 200, 'denied');
    check((await api(`/v1/runs/${paused.id}/submit`, { call_id: 'call_ask', output: 'Red' })).status === 200, 'submitted');
    await until(async () => (await page.locator('dl.numbers dd').first().textContent()) !== calls, 'the tool page counts the new call live', WAIT);
    await shot(page, 'console-tool');
    console.log(JSON.stringify({ run_id: done.id, tree: tree.body.id }));
  },

  // A phone-sized screen: everything fits the width; the controls are there.
  async phone(page) {
    await openInbox(page);
    const run = await startRun('Save 14.');
    const write = item(page, run, 'write_file', 'call_write');
    await write.waitFor({ timeout: WAIT });
    const fits = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    check(fits, 'no sideways scrolling on a phone');
    for (const name of ['Approve', 'Approve always', 'Deny', 'Edit']) {
      check(await button(write, name).isVisible(), `${name} is on screen`);
    }
    await shot(page, 'phone-inbox');
    await button(write, 'Approve always').tap();
    await write.waitFor({ state: 'detached', timeout: WAIT });
    console.log(JSON.stringify({ run_id: run.id }));
  },
};

async function main() {
  const run = scenarios[scenario];
  if (!run) throw new Error(`no scenario '${scenario}'; one of: ${Object.keys(scenarios).join(', ')}`);
  mkdirSync(ARTIFACTS, { recursive: true });
  // The back/forward cache scenario loads the page through a relay that counts streams,
  // with the cache on (playwright turns it off by default).
  const bfcache = scenario === 'bfcache';
  const counter = bfcache ? await streamCounter() : null;
  if (counter) SITE = counter.url;
  // launch() gives the browser a fresh, empty profile of its own each time.
  const browser = await chromium.launch({
    executablePath: process.env.TOOLGATE_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
    ignoreDefaultArgs: bfcache ? ['--disable-back-forward-cache'] : [],
  });
  const phone = scenario === 'phone';
  const context = await browser.newContext(phone
    ? { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true }
    : { viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  const origin = new URL(SITE).origin;
  const outside = [];
  const problems = [];
  const nav = { count: 0 };
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith('data:')) outside.push(u);
  });
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) nav.count += 1; });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !(scenario === 'tenants' ? /status of 4(01|04|09|22)/ : /status of 4(01|09|22)/).test(m.text())) problems.push(`console: ${m.text()}`); });
  try {
    await run(page, nav, counter);
    check(outside.length === 0, `no request left the server: ${outside.join(', ')}`);
    check(problems.length === 0, problems.join('; '));
  } catch (e) {
    await shot(page, `${scenario}-failure`).catch(() => {});
    throw e;
  } finally {
    await browser.close();
    if (counter) counter.close();
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(`inbox.mjs ${scenario}: ${e.stack || e}`);
  process.exit(1);
});
