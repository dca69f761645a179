// The approval inbox and the console: what waits for a person, decided in place; runs,
// a run's timeline; a conversation's stats and runs; the tool catalogue and a tool's
// stats. It talks only to this server's /v1 API (see api.js).

import { setLive } from './dom.js';
import { DECIDER, KEY, endSession, newSession, onKey } from './api.js';
import { inboxPage, runPage, conversationPage } from './pages.js';
import { runsListPage, toolsPage, toolPage } from './console.js';

const forget = document.getElementById('forget-key');

function start() {
  const signal = newSession();
  forget.hidden = !sessionStorage.getItem(KEY);
  setLive(false, 'Connecting…');
  const path = location.pathname;
  let m;
  if ((m = path.match(/^\/runs\/([^/]+)$/))) runPage(decodeURIComponent(m[1]), signal);
  else if ((m = path.match(/^\/conversations\/([^/]+)$/))) conversationPage(decodeURIComponent(m[1]), signal);
  else if (path === '/runs') runsListPage(signal);
  else if (path === '/tools') toolsPage(signal);
  else if ((m = path.match(/^\/tools\/([^/]+)$/))) toolPage(decodeURIComponent(m[1]), signal);
  else inboxPage(signal);
  for (const a of document.querySelectorAll('nav[aria-label=Main] a')) {
    const here = a.getAttribute('href') === '/' ? path === '/' : path.startsWith(a.getAttribute('href'));
    if (here) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
}

const decider = document.getElementById('decider');
decider.value = localStorage.getItem(DECIDER) || '';
decider.addEventListener('change', () => localStorage.setItem(DECIDER, decider.value.trim()));

forget.addEventListener('click', () => {
  sessionStorage.removeItem(KEY);
  location.reload();
});

// A page kept in the back/forward cache holds no stream open: the browser gives this
// host six HTTP/1.1 connections, and six cached pages, each with its live feed, would
// leave none for the page in front (it would hang). The streams stop when the page is
// hidden; a page restored from the cache starts again, reading what changed meanwhile.
addEventListener('pagehide', endSession);
addEventListener('pageshow', (e) => { if (e.persisted) start(); });

onKey(start);
start();
