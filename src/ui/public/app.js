// The console's shell: sign-in, navigation (hash routes, which never hold the token), and the pages.
import { ApiError, zoneApi } from './api.js';
import { clear, errorBox, h } from './dom.js';
import { clearToken, getToken, setToken } from './session.js';
import { zonesPage } from './pages/zones.js';
import { recordsPage } from './pages/records.js';
import { journalPage } from './pages/journal.js';
import { plansPage, planPage } from './pages/plans.js';
import { tenantsPage } from './pages/tenants.js';
import { planAsPage } from './pages/plan-as.js';
import { accountsPage } from './pages/accounts.js';
import { orphansPage } from './pages/orphans.js';

// Routes: #/zones, #/zones/<zone>, #/journal, #/plans, #/plans/<id>, #/tenants, #/plan-as, #/accounts, #/orphans.
const ROUTES = [
  { path: 'zones', title: 'Zones', render: zonesPage, nav: true },
  { path: 'zones/', title: 'Records', render: recordsPage },
  { path: 'journal', title: 'Journal', render: journalPage, nav: true, admin: true },
  { path: 'plans', title: 'Plans', render: plansPage, nav: true, admin: true },
  { path: 'plans/', title: 'Plan', render: planPage, admin: true },
  { path: 'tenants', title: 'Tenants', render: tenantsPage, nav: true, admin: true },
  { path: 'plan-as', title: 'PlanAs', render: planAsPage, nav: true, admin: true },
  // OVH accounts (issue 44): pages/accounts.js; the Zones page links it too.
  { path: 'accounts', title: 'Accounts', render: accountsPage, nav: true, admin: true },
  { path: 'orphans', title: 'Orphans', render: orphansPage, nav: true, admin: true },
];

const main = document.getElementById('page');
const nav = document.getElementById('nav');
const whoBox = document.getElementById('who');
/** The signed-in tenant: { tenant, scopes, admin }. */
let who;
/** Bumped at each navigation, so that a page still loading does not draw over the next one. */
let generation = 0;

function pageOf(hash) {
  const path = hash.replace(/^#\/?/, '');
  for (const r of ROUTES) {
    if (r.path.endsWith('/') ? path.startsWith(r.path) && path.length > r.path.length : path === r.path) {
      return { route: r, arg: r.path.endsWith('/') ? decodeURIComponent(path.slice(r.path.length)) : '' };
    }
  }
  return undefined;
}

function signInView(message) {
  clear(nav);
  clear(whoBox);
  clear(main);
  const input = h('input', {
    type: 'password',
    id: 'token',
    name: 'token',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'dnsp_…',
    required: true,
    'aria-label': 'token',
  });
  const status = h('p', { class: 'muted', 'data-testid': 'signin-status' }, message ?? '');
  const form = h(
    'form',
    {
      class: 'signin',
      'data-testid': 'signin',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const token = input.value.trim();
        input.value = '';
        if (token === '') return;
        setToken(token);
        status.textContent = 'Signing in…';
        try {
          await start();
        } catch (e) {
          clearToken();
          signInView(e instanceof ApiError && e.code === 'unauthenticated' ? `That token was refused: ${e.message}` : `Sign-in failed: ${e.message}`);
        }
      },
    },
    h('h1', null, 'dnsplane console'),
    h(
      'p',
      null,
      'Sign in with a dnsplane bearer token: an admin token sees everything; a tenant token sees its own zones and records. The token stays in this tab (sessionStorage) until you sign out or close it.',
    ),
    h('label', { for: 'token' }, 'Token'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
    status,
  );
  main.append(form);
  input.focus();
}

function drawChrome() {
  clear(nav);
  for (const r of ROUTES.filter((r) => r.nav && (!r.admin || who.admin))) {
    nav.append(h('a', { href: `#/${r.path}`, 'data-route': r.path }, r.title));
  }
  clear(whoBox);
  whoBox.append(
    h('span', { 'data-testid': 'who' }, `${who.tenant}${who.admin ? ' (admin)' : ''}`),
    h(
      'button',
      {
        type: 'button',
        class: 'link',
        'data-testid': 'signout',
        onclick: () => {
          clearToken();
          who = undefined;
          location.hash = '';
          signInView('Signed out.');
        },
      },
      'Sign out',
    ),
  );
}

async function show() {
  if (!who) return;
  const mine = ++generation;
  const found = pageOf(location.hash);
  if (!found) {
    location.replace('#/zones');
    return;
  }
  for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', found.route.path.startsWith(a.dataset.route));
  document.title = `${found.route.title} · dnsplane console`;
  const page = h('section', { class: 'page', 'data-page': found.route.path.replace(/\/$/, '') });
  clear(main);
  main.append(page);
  try {
    await found.route.render(page, { arg: found.arg, who, stale: () => mine !== generation });
  } catch (e) {
    if (mine !== generation) return;
    if (e instanceof ApiError && e.code === 'unauthenticated') {
      clearToken();
      who = undefined;
      signInView(`Signed out: ${e.message}`);
      return;
    }
    page.append(errorBox(e));
  }
}

async function start() {
  const me = await zoneApi('ListZones', {});
  const scopes = me.scopes ?? [];
  who = { tenant: me.tenant ?? '', scopes, admin: scopes.includes('admin') };
  drawChrome();
  if (!location.hash || location.hash === '#' || location.hash === '#/') location.replace('#/zones');
  await show();
}

window.addEventListener('hashchange', () => void show());
if (getToken() === '') signInView();
else
  start().catch((e) => {
    clearToken();
    signInView(`Please sign in again: ${e.message}`);
  });
