// webhooker console: a small single-page app over the admin API.
//
// Rules this file keeps:
// - Every value from the API is put into the page as text (textContent, text
//   nodes, attribute values): stored payloads are untrusted input. Nothing is
//   ever parsed as HTML; no inline handlers, nothing the CSP would have to allow.
// - The admin token lives in sessionStorage only and goes out only as the
//   Authorization header of API calls; it is never rendered or put in a URL.
// - Routes are URL fragments (#/webhooks/<id>) holding ids, never data; the
//   webhook list keeps its page as #/?cursor=<the API's opaque cursor>.
// - A portal link (#/portal/<secret>) is exchanged at once for an HttpOnly
//   session cookie and dropped from the URL; the page then shows that one
//   webhook only, with the link's scopes (docs/console.md, *Portal*).
'use strict';

(() => {
  const TOKEN_KEY = 'webhooker.adminToken';
  const PORTAL_KEY = 'webhooker.portal';  // {webhook_id, scopes} of a portal session
  const REFRESH_MS = 3000;
  const WEBHOOK_PAGE = 50;  // webhooks per page of the list
  const EVENTS_PAGE = 25;
  const STATUSES = ['pending', 'retrying', 'delivered', 'failed'];

  const app = document.getElementById('app');
  const crumbs = document.getElementById('crumbs');
  const notice = document.getElementById('notice');
  const signOutButton = document.getElementById('sign-out');

  // ---------------------------------------------------------------------------
  // DOM helpers: strings always become text nodes.

  function h(tag, props, ...children) {
    const node = document.createElement(tag);
    setProps(node, props);
    appendAll(node, children);
    return node;
  }

  function setProps(node, props) {
    if (!props) return;
    for (const [key, value] of Object.entries(props)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = String(value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
  }

  // Replaces a node's children; arrays are flattened, null and false skipped.
  function fill(node, ...children) {
    node.replaceChildren();
    appendAll(node, children);
  }

  function appendAll(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
  }

  const SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    appendAll(node, children);
    return node;
  }

  function link(href, text, cls) {
    return h('a', { href, class: cls }, text);
  }

  function chip(kind, text, name) {
    return h('span', { class: 'chip ' + kind }, name ? h('span', { class: 'chip-name' }, name) : null, text);
  }

  function card(title, options, ...body) {
    const head = h('div', { class: 'card-head' }, h('h2', null, title), options && options.tools);
    return h('section', { class: 'card', 'aria-label': title }, head, body);
  }

  // `stack`: on a phone each row becomes a block (style.css), its cells
  // labelled by their data-label.
  function table(columns, rows, stack) {
    const thead = h('thead', null, h('tr', null, columns.map((c) =>
      h('th', { class: c.cls, scope: 'col' }, c.title))));
    return h('div', { class: 'table-wrap' },
      h('table', { class: stack ? 'stack' : null }, thead, h('tbody', null, rows)));
  }

  function td(cls, ...content) {
    return h('td', { class: cls }, content);
  }

  // ---------------------------------------------------------------------------
  // Formatting

  const pad = (n) => String(n).padStart(2, '0');

  // Local time, to the second; the stored UTC value stays in the tooltip.
  function time(iso) {
    if (!iso) return h('span', { class: 'muted' }, '—');
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return h('span', null, iso);
    const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return h('time', { datetime: iso, title: iso, class: 'nowrap' }, text);
  }

  function bytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  }

  const count = (n) => Number(n || 0).toLocaleString('en-US');

  function attemptOutcome(a) {
    if (a.status_code !== null && a.status_code !== undefined) {
      return a.error ? `HTTP ${a.status_code} · ${a.error}` : `HTTP ${a.status_code}`;
    }
    return a.error || (a.success ? 'ok' : 'failed');
  }

  function shortId(id) {
    return h('span', { class: 'mono', title: id }, String(id).slice(0, 8));
  }

  // ---------------------------------------------------------------------------
  // The admin API

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // The portal session of this tab, or null (signed in with the admin token).
  function portal() {
    try { return JSON.parse(sessionStorage.getItem(PORTAL_KEY)); } catch (e) { return null; }
  }
  const portalMay = (scope) => { const p = portal(); return !p || p.scopes.includes(scope); };

  // One API call; a refused token is an ApiError with status 401 like any other.
  // A portal session's calls carry its cookie instead of a token.
  async function request(method, path, body) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const inPortal = portal() !== null;
    if (!token && !inPortal) throw new ApiError(401, 'unauthorized', 'Not signed in.');
    const init = {
      method,
      headers: { Accept: 'application/json' },
      cache: 'no-store',
      credentials: inPortal ? 'same-origin' : 'omit',
      referrerPolicy: 'no-referrer',
    };
    if (!inPortal) init.headers.Authorization = 'Bearer ' + token;
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch('/api/v1' + path, init);
    } catch (e) {
      throw new ApiError(0, 'unreachable', 'The daemon did not answer.');
    }
    let data = null;
    if (res.status !== 204) {
      try { data = await res.json(); } catch (e) { data = null; }
    }
    if (!res.ok) {
      const err = data && data.error;
      throw new ApiError(res.status, err ? err.code : 'http_' + res.status,
        err ? err.message : `The request failed (HTTP ${res.status}).`);
    }
    return data;
  }

  // An API call of a signed-in page: a refused token signs the page out.
  async function api(method, path, body) {
    try {
      return await request(method, path, body);
    } catch (e) {
      if (e.status === 401) {
        signOut(portal() ? 'The portal session has ended. Ask for a new link.'
          : 'The admin token was refused. Sign in again.');
      }
      throw e;
    }
  }

  const webhookPath = (id) => '/webhooks/' + encodeURIComponent(id);

  // ---------------------------------------------------------------------------
  // Notices, refresh, navigation

  let noticeTimer = null;
  function showNotice(text, kind) {
    clearTimeout(noticeTimer);
    notice.textContent = text;
    notice.className = 'notice ' + (kind || '');
    notice.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    notice.hidden = false;
    if (kind !== 'error') noticeTimer = setTimeout(() => { notice.hidden = true; }, 5000);
  }
  function clearNotice() {
    clearTimeout(noticeTimer);
    notice.hidden = true;
  }
  function reportError(e) {
    if (e instanceof ApiError && e.status === 401) return;  // already signed out
    showNotice(e.message || String(e), 'error');
  }

  let view = 0;          // bumped on every navigation; stale work checks it
  let refreshTimer = null;
  let onResize = null;   // the current page's redraw for a new window width
  window.addEventListener('resize', () => { if (onResize) onResize(); });

  function startRefresh(refresh) {
    const mine = view;
    let busy = false;
    refreshTimer = setInterval(async () => {
      if (busy || document.hidden || mine !== view || document.querySelector('dialog[open]')) return;
      busy = true;
      try { await refresh(); } catch (e) { reportError(e); } finally { busy = false; }
    }, REFRESH_MS);
  }

  function setCrumbs(...parts) {
    fill(crumbs);
    if (portal()) parts = parts.filter((p) => p.href !== '#/' && p.text !== 'Webhooks');
    parts.forEach((p, i) => {
      if (i > 0) crumbs.append(h('span', { class: 'sep', 'aria-hidden': 'true' }, '/'));
      crumbs.append(p.href ? link(p.href, p.text) : h('span', null, p.text));
    });
  }

  function pageHead(title, sub, ...actions) {
    return h('div', { class: 'page-head' },
      h('div', null, h('h1', null, title), sub ? h('div', { class: 'sub' }, sub) : null),
      h('div', { class: 'actions' }, actions));
  }

  // Runs an action from a button: disabled while it runs, errors shown.
  async function act(button, work) {
    button.disabled = true;
    try {
      await work();
    } catch (e) {
      reportError(e);
    } finally {
      button.disabled = false;
    }
  }

  function confirmDialog(title, message, confirmLabel) {
    return new Promise((resolve) => {
      const dialog = h('dialog', { 'aria-label': title },
        h('div', { class: 'card-head' }, h('h2', null, title)),
        h('div', { class: 'card-body' }, h('p', { class: 'dialog-message' }, message)),
        h('div', { class: 'form-actions' },
          h('button', { type: 'button', class: 'btn', onclick: () => dialog.close('cancel') }, 'Cancel'),
          h('button', { type: 'button', class: 'btn btn-primary', onclick: () => dialog.close('ok') },
            confirmLabel)));
      dialog.addEventListener('close', () => {
        dialog.remove();
        resolve(dialog.returnValue === 'ok');
      });
      document.body.append(dialog);
      dialog.showModal();
    });
  }

  // ---------------------------------------------------------------------------
  // Sign-in

  function signOut(message) {
    if (portal()) {
      sessionStorage.removeItem(PORTAL_KEY);
      // "Signed out" once the daemon has ended the session, not before: a
      // request sent meanwhile would still be answered.
      const ended = () => renderPortalEnded(message || 'Signed out of the portal.');
      fetch('/api/v1/portal/session', { method: 'DELETE', credentials: 'same-origin', cache: 'no-store' })
        .then(ended, ended);
      return;
    }
    sessionStorage.removeItem(TOKEN_KEY);
    if (message) showNotice(message, 'error');
    if (location.hash && location.hash !== '#/') location.hash = '#/';
    else route();
  }

  // A portal link: its secret becomes a session cookie (once: the link is
  // single-use), then the URL holds only the webhook's id.
  async function openPortal(secret) {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(PORTAL_KEY);
    history.replaceState(null, '', location.pathname + '#/');
    fill(app, h('p', { class: 'empty' }, 'Opening the portal…'));
    let res;
    try {
      res = await fetch('/api/v1/portal/session', {
        method: 'POST', credentials: 'same-origin', cache: 'no-store', referrerPolicy: 'no-referrer',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ link: secret }),
      });
    } catch (e) {
      return renderPortalEnded('The daemon did not answer.');
    }
    const data = await res.json().catch(() => null);
    if (!res.ok || !data) {
      return renderPortalEnded(data && data.error ? data.error.message : `The link was refused (HTTP ${res.status}).`);
    }
    sessionStorage.setItem(PORTAL_KEY, JSON.stringify({ webhook_id: data.webhook_id, scopes: data.scopes }));
    location.replace('#/webhooks/' + encodeURIComponent(data.webhook_id));
  }

  function renderPortalEnded(message) {
    setCrumbs();
    signOutButton.hidden = true;
    fill(app, h('div', { class: 'card signin portal-ended' },
      h('div', { class: 'card-head' }, h('h2', null, 'Portal')),
      h('div', { class: 'card-body' }, h('p', null, message))));
  }

  function renderSignIn() {
    setCrumbs();
    signOutButton.hidden = true;
    const token = h('input', {
      type: 'password', id: 'token', name: 'token', required: true, autocomplete: 'off',
      spellcheck: 'false', placeholder: 'whk_…',
    });
    const error = h('div', { class: 'form-error', role: 'alert' });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Sign in');
    const form = h('form', { class: 'card signin', 'aria-label': 'Sign in' },
      h('div', { class: 'card-head' }, h('h2', null, 'Sign in')),
      h('div', { class: 'card-body' },
        h('p', null, 'Enter the admin token. It is kept in this tab only and sent as the API\u2019s Authorization header.'),
        h('label', { class: 'field' }, h('span', null, 'Admin token'), token),
        error,
        h('div', { class: 'form-actions' }, submit)));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      error.textContent = '';
      submit.disabled = true;
      sessionStorage.setItem(TOKEN_KEY, token.value.trim());
      try {
        await request('GET', '/webhooks?limit=1');
        clearNotice();
        route();
      } catch (err) {
        sessionStorage.removeItem(TOKEN_KEY);
        clearNotice();
        error.textContent = err.status === 401 ? 'That token was refused.' : err.message;
        submit.disabled = false;
        token.focus();
      }
    });
    fill(app, form);
    token.focus();
  }

  // ---------------------------------------------------------------------------
  // Webhook list

  // The list is the API's pages (GET /webhooks?limit=&cursor=, oldest first).
  // The page's cursor is in the URL (#/?cursor=...), so a reload or a shared
  // link shows the same page; history.state keeps the cursors of the pages
  // before it (null: the first page), for Previous and the "51–100" count. A
  // link opened without them offers the first page instead.
  async function showWebhookList(cursor) {
    setCrumbs({ text: 'Webhooks' });
    const mine = view;
    const listBody = h('div', { class: 'card-body flush' }, h('p', { class: 'empty' }, 'Loading…'));
    const form = webhookForm();
    form.hidden = true;
    const newButton = h('button', {
      type: 'button', class: 'btn btn-primary',
      onclick: () => { form.hidden = !form.hidden; if (!form.hidden) form.querySelector('input').focus(); },
    }, 'New webhook');
    const refreshButton = h('button', { type: 'button', class: 'btn', onclick: () => act(refreshButton, refresh) }, 'Refresh');
    fill(app,
      pageHead('Webhooks', 'Each webhook has its own entrypoints, targets and events database.', refreshButton, newButton),
      form,
      card('All webhooks', null, listBody));

    const state = history.state;
    let before = cursor && state && Array.isArray(state.webhookPages) ? state.webhookPages : [];
    const firstPage = () => link('#/', 'Go to the first page.');
    // Each stats call reads one webhook's events file, so only the rows shown
    // are asked for, on every refresh. A refresh overtaken by a newer one
    // (another page asked for) asks for no more and shows nothing.
    let latest = 0;
    async function refresh() {
      const mineToo = ++latest;
      const current = () => mine === view && mineToo === latest;
      const q = new URLSearchParams({ limit: String(WEBHOOK_PAGE) });
      if (cursor) q.set('cursor', cursor);
      let page;
      try {
        page = await api('GET', '/webhooks?' + q);
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 400 || !cursor) throw e;
        if (current()) fill(listBody, h('p', { class: 'empty' }, e.message + '. ', firstPage()));
        return;
      }
      const shown = page.webhooks;
      const stats = await mapLimited(shown, 6, (w) => (current()
        ? api('GET', webhookPath(w.id) + '/stats').catch(() => null) : null));
      if (!current()) return;
      if (shown.length === 0) {
        fill(listBody, h('p', { class: 'empty' }, cursor
          ? ['No webhooks after the previous page. ', firstPage()]
          : 'No webhooks yet. Create one to get an entrypoint URL to send events to.'));
        return;
      }
      const rows = shown.map((w, i) => {
        const s = stats[i];
        const d = s ? s.deliveries : null;
        const num = (label, v, bad) => h('td', {
          class: 'num' + (bad && v > 0 ? ' bad-text' : ''), 'data-label': label,
        }, s ? count(v) : '—');
        return h('tr', null,
          td('lead', link('#/webhooks/' + encodeURIComponent(w.id), w.name),
            w.description ? h('span', { class: 'cell-sub' }, w.description) : null),
          num('events', s && s.events), num('pending', d && d.pending),
          num('retrying', d && d.retrying), num('failed', d && d.failed, true),
          td('hide-narrow', time(w.created_at)));
      });
      fill(listBody, table([
        { title: 'Name' }, { title: 'Events', cls: 'num' }, { title: 'Pending', cls: 'num' },
        { title: 'Retrying', cls: 'num' }, { title: 'Failed', cls: 'num' },
        { title: 'Created', cls: 'hide-narrow' },
      ], rows, true), listPager(cursor, before, shown.length, page.next_cursor, go));
    }
    // A new history entry per page, so Back and a reload show it again.
    function go(to, pagesBefore) {
      cursor = to;
      before = pagesBefore;
      history.pushState({ webhookPages: before }, '', to ? '#/?cursor=' + encodeURIComponent(to) : '#/');
      refresh().catch(reportError);
    }
    await refresh();
    startRefresh(refresh);
  }

  // "51–100" with Previous and Next, or nothing when one page holds all.
  // `before`: the cursors of the pages before this one; from a link without
  // them, the count is not known and Previous is the first page.
  function listPager(cursor, before, shown, nextCursor, go) {
    if (!cursor && !nextCursor) return null;
    const known = !cursor || (before.length > 0 && before[0] === null);
    const previous = h('button', { type: 'button', class: 'btn btn-small', disabled: !cursor },
      !cursor || before.length > 0 ? 'Previous' : 'First page');
    previous.addEventListener('click', () => (before.length > 0
      ? go(before[before.length - 1], before.slice(0, -1)) : go(null, [])));
    const next = h('button', { type: 'button', class: 'btn btn-small', disabled: !nextCursor }, 'Next');
    next.addEventListener('click', () => go(nextCursor, [...before, cursor]));
    const first = before.length * WEBHOOK_PAGE;
    return h('div', { class: 'pager' },
      known ? h('span', { class: 'pager-count' }, `${count(first + 1)}\u2013${count(first + shown)}`) : null,
      previous, next);
  }

  // Runs fn over items with at most `limit` calls at once; results in order.
  async function mapLimited(items, limit, fn) {
    const out = new Array(items.length);
    let next = 0;
    async function worker() {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return out;
  }

  function webhookForm() {
    const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
    const description = h('input', { type: 'text', name: 'description', maxlength: 2000, autocomplete: 'off' });
    const retention = h('input', { type: 'number', name: 'retention_days', min: 1, max: 3650, value: 30, required: true });
    const error = h('div', { class: 'form-error wide', role: 'alert' });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create webhook');
    const form = h('form', { class: 'grid' },
      h('label', { class: 'field' }, h('span', null, 'Name'), name),
      h('label', { class: 'field' }, h('span', null, 'Keep events for (days)'), retention),
      h('label', { class: 'field wide' }, h('span', null, 'Description'), description),
      error,
      h('div', { class: 'form-actions wide' }, submit));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      error.textContent = '';
      act(submit, async () => {
        try {
          const created = await api('POST', '/webhooks', {
            name: name.value,
            description: description.value,
            retention_days: Number(retention.value),
          });
          showNotice(`Webhook \u201c${created.name}\u201d created.`, 'ok');
          location.hash = '#/webhooks/' + encodeURIComponent(created.id);
        } catch (err) {
          if (err.status === 401) return;
          error.textContent = err.message;
        }
      });
    });
    return card('New webhook', null, h('div', { class: 'card-body' }, form));
  }

  // ---------------------------------------------------------------------------
  // One webhook: numbers, entrypoints, chart, targets, event log

  async function showWebhook(id) {
    const mine = view;
    const webhook = await api('GET', webhookPath(id));
    if (mine !== view) return;
    setCrumbs({ text: 'Webhooks', href: '#/' }, { text: webhook.name });

    const statsRow = h('div', { class: 'stats', 'aria-label': 'Totals' });
    const chartBody = h('div', { class: 'card-body chart' });
    const targetsBody = h('div', { class: 'card-body flush' });
    const eventsBody = h('div', { class: 'card-body flush' });
    const targetForm = newTargetForm(id, () => refresh());
    targetForm.hidden = true;

    const events = { status: '', eventType: '', cursors: [null] };  // the cursor of each page shown so far
    const statusFilter = h('select', { 'aria-label': 'Status filter' },
      h('option', { value: '' }, 'Any status'),
      STATUSES.map((s) => h('option', { value: s }, s)));
    statusFilter.addEventListener('change', () => {
      events.status = statusFilter.value;
      events.cursors = [null];
      loadEvents().catch(reportError);
    });
    const typeFilter = h('input', { type: 'text', 'aria-label': 'Event type filter', placeholder: 'event type, or prefix.*', maxlength: 255, autocomplete: 'off' });
    typeFilter.addEventListener('change', () => {
      events.eventType = typeFilter.value.trim();
      events.cursors = [null];
      loadEvents().catch(reportError);
    });

    const refreshButton = h('button', { type: 'button', class: 'btn', onclick: () => act(refreshButton, refresh) }, 'Refresh');
    const replayAll = h('button', { type: 'button', class: 'btn', onclick: () => act(replayAll, () => replay(id, null, 'this webhook', refresh)) }, 'Replay dead letters');
    replayAll.hidden = !portalMay('operate');
    const addTarget = h('button', {
      type: 'button', class: 'btn btn-small',
      onclick: () => { targetForm.hidden = !targetForm.hidden; if (!targetForm.hidden) targetForm.querySelector('input').focus(); },
    }, 'Add target');
    addTarget.hidden = !portalMay('manage');

    fill(app,
      pageHead(webhook.name, webhook.description || h('span', { class: 'mono' }, webhook.id), replayAll, refreshButton),
      statsRow,
      entrypointsCard(webhook),
      card('Last 24 hours', { tools: chartLegend() }, chartBody),
      card('Targets', { tools: addTarget }, targetForm, targetsBody),
      card('Events', { tools: h('div', { class: 'toolbar' }, typeFilter, statusFilter) }, eventsBody));

    async function loadEvents() {
      const cursor = events.cursors[events.cursors.length - 1];
      const q = new URLSearchParams({ limit: String(EVENTS_PAGE) });
      if (events.status) q.set('status', events.status);
      if (events.eventType) q.set('event_type', events.eventType);
      if (cursor) q.set('cursor', cursor);
      const page = await api('GET', `${webhookPath(id)}/events?${q}`);
      if (mine !== view) return;
      fill(eventsBody, eventTable(id, page.events, events.status),
        pager(events, page.next_cursor, () => loadEvents().catch(reportError)));
    }

    let hourly = null;
    onResize = () => { if (hourly) fill(chartBody, chart(hourly, chartBody)); };

    async function refresh() {
      const [stats, listed] = await Promise.all([
        api('GET', webhookPath(id) + '/stats'), api('GET', webhookPath(id) + '/targets')]);
      if (mine !== view) return;
      renderStats(statsRow, stats);
      hourly = stats.hourly;
      fill(chartBody, chart(hourly, chartBody));
      const routing = new Map(listed.targets.map((t) => [t.id, t]));
      fill(targetsBody, targetTable(id, stats.targets, routing, refresh));
      await loadEvents();
    }

    await refresh();
    startRefresh(refresh);
  }

  function renderStats(row, stats) {
    const d = stats.deliveries;
    const stat = (label, value, cls) => h('div', { class: 'stat ' + (cls || '') },
      h('div', { class: 'label' }, label), h('div', { class: 'value' }, count(value)));
    fill(row,
      stat('Events', stats.events),
      stat('Pending', d.pending),
      stat('Retrying', d.retrying, d.retrying > 0 ? 'warn' : ''),
      stat('Delivered', d.delivered),
      stat('Failed', d.failed, d.failed > 0 ? 'bad' : ''));
  }

  function chartLegend() {
    return h('div', { class: 'legend' },
      h('span', null, h('span', { class: 'swatch received' }), 'received'),
      h('span', null, h('span', { class: 'swatch failed' }), 'failed'));
  }

  // Bars per hour: events received and deliveries that failed in that hour,
  // drawn at the container's width so text keeps its size.
  function chart(hours, container) {
    const width = Math.max(300, Math.round(container.clientWidth) - 32 || 720);
    const height = 170;
    const left = 36;
    const bottom = 22;
    const top = 10;
    const plotH = height - bottom - top;
    const max = Math.max(1, ...hours.map((x) => Math.max(x.received, x.failed)));
    const nice = niceCeiling(max);
    const slot = (width - left) / hours.length;
    const barW = Math.max(2, slot * 0.36);
    const y = (v) => top + plotH - (v / nice) * plotH;
    const parts = [];
    for (const v of Number.isInteger(nice / 2) ? [0, nice / 2, nice] : [0, nice]) {
      parts.push(svg('line', { class: v === 0 ? 'axis' : 'grid', x1: left, x2: width, y1: y(v), y2: y(v) }));
      parts.push(svg('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end' }, count(v)));
    }
    hours.forEach((x, i) => {
      const x0 = left + i * slot + slot / 2 - barW;
      const label = `${hourLabel(x.hour)}: ${x.received} received, ${x.failed} failed`;
      const group = svg('g', { class: 'hour' }, svg('title', null, label));
      if (x.received > 0) group.append(svg('rect', { class: 'bar-received', x: x0, y: y(x.received), width: barW, height: y(0) - y(x.received), rx: 1 }));
      if (x.failed > 0) group.append(svg('rect', { class: 'bar-failed', x: x0 + barW, y: y(x.failed), width: barW, height: y(0) - y(x.failed), rx: 1 }));
      group.append(svg('rect', { x: left + i * slot, y: top, width: slot, height: plotH, fill: 'transparent' }));
      parts.push(group);
      if (i === hours.length - 1) {
        parts.push(svg('text', { x: width, y: height - 6, 'text-anchor': 'end' }, 'now'));
      } else if (i % 6 === 0) {
        parts.push(svg('text', { x: left + i * slot + slot / 2, y: height - 6, 'text-anchor': 'middle' }, hourLabel(x.hour)));
      }
    });
    const total = hours.reduce((a, x) => [a[0] + x.received, a[1] + x.failed], [0, 0]);
    return svg('svg', {
      viewBox: `0 0 ${width} ${height}`, role: 'img',
      'aria-label': `Last 24 hours: ${total[0]} events received, ${total[1]} deliveries failed`,
    }, parts);
  }

  function niceCeiling(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return Math.max(2, m * p);
    return v;
  }

  function hourLabel(iso) {
    const d = new Date(iso);
    return `${pad(d.getHours())}:00`;
  }

  // ---------------------------------------------------------------------------
  // Entrypoints: their URLs, and (with `manage`) a form to add one or change
  // how it verifies senders, answers handshakes and answers stored events.

  function entrypointsCard(webhook) {
    const manage = portalMay('manage');
    const listBody = h('div', { class: 'card-body' });
    const addForm = manage ? entrypointForm(webhook.id, null, () => reload()) : null;
    if (addForm) addForm.hidden = true;
    const add = manage ? h('button', {
      type: 'button', class: 'btn btn-small',
      onclick: () => { addForm.hidden = !addForm.hidden; if (!addForm.hidden) addForm.querySelector('input').focus(); },
    }, 'Add entrypoint') : null;

    function render(entrypoints) {
      if (entrypoints.length === 0) {
        fill(listBody, h('p', { class: 'empty' }, 'No entrypoint: events cannot arrive. ' +
          (manage ? 'Add one to get a URL.' : 'Someone who manages this webhook can add one.')));
        return;
      }
      fill(listBody, h('div', { class: 'copy-list' }, entrypoints.map((ep) => {
        const edit = manage ? h('button', { type: 'button', class: 'btn btn-small' }, 'Edit') : null;
        if (edit) edit.addEventListener('click', () => editEntrypoint(webhook.id, ep, reload));
        return h('div', { class: 'copy-row', 'data-entrypoint-id': ep.id },
          h('span', { class: 'ep-name', title: ep.id }, ep.name), entrypointUrl(ep), edit, entrypointChips(ep));
      })));
    }
    async function reload() {
      const { entrypoints } = await api('GET', webhookPath(webhook.id) + '/entrypoints');
      render(entrypoints);
    }
    render(webhook.entrypoints);
    return card('Entrypoints', { tools: h('div', { class: 'toolbar' }, h('span', { class: 'hint' }, 'POST events here'), add) },
      addForm, listBody);
  }

  function entrypointUrl(ep) {
    const url = location.origin + ep.url;
    const input = h('input', { type: 'text', readonly: true, value: url, 'aria-label': 'Entrypoint URL' });
    const copy = h('button', { type: 'button', class: 'btn btn-small' }, 'Copy');
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(url);
      } catch (e) {
        input.select();  // no clipboard access (plain http to a remote host): select for Ctrl+C
        return;
      }
      copy.textContent = 'Copied';
      setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
    });
    return [input, copy];
  }

  function entrypointChips(ep) {
    const secrets = ep.verification_settings ? ep.verification_settings.secret_count : 0;
    return [
      chip(ep.active ? 'active' : 'inactive', ep.active ? 'active' : 'inactive'),
      ep.verification && ep.verification !== 'none'
        ? chip('closed', `verifies ${ep.verification}${secrets > 1 ? ` (${secrets} secrets)` : ''}`) : null,
      ep.handshake ? chip('closed', 'answers ' + ep.handshake.kind + ' handshake') : null,
      ep.response ? chip('closed', 'answers ' + ep.response.status + ' ' + ep.response.content_type) : null,
    ];
  }

  function editEntrypoint(webhookId, ep, onSaved) {
    const dialog = h('dialog', { class: 'routing-dialog', 'aria-label': 'Entrypoint ' + ep.name });
    const form = entrypointForm(webhookId, ep, onSaved, () => dialog.close());
    dialog.append(form);
    document.body.append(dialog);
    dialog.addEventListener('close', () => dialog.remove());
    dialog.showModal();
  }

  // What the API accepts (docs/providers.md): the presets, the custom
  // scheme's choices, the handshakes (each only with its own scheme).
  const PRESETS = ['github', 'stripe', 'standard', 'shopify', 'slack', 'twilio', 'zoom', 'linear',
    'paddle', 'gitlab', 'meta', 'twitter', 'dropbox'];
  const HANDSHAKES = ['slack', 'meta', 'zoom', 'twitter', 'dropbox'];
  const MAX_SECRETS = 3;
  const CUSTOM_TEXT = [  // [field, caption, placeholder]
    ['header', 'Signature header', 'X-Signature'],
    ['prefix', 'Prefix', 'sha256='],
    ['separator', 'Separator', ','],
    ['signature_key', 'Signature key', 'v1'],
    ['timestamp_key', 'Timestamp key', 't'],
    ['timestamp_header', 'Timestamp header', 'X-Timestamp'],
    ['content', 'Signed content (a template; the default {body})', '{body}'],
  ];
  const CUSTOM_CHOICES = [  // [field, caption, values; the first is the API's default]
    ['algorithm', 'Algorithm', ['hmac-sha256', 'hmac-sha1', 'hmac-sha512', 'token', 'basic']],
    ['encoding', 'Encoding', ['hex', 'base64']],
    ['secret_format', 'Secret format', ['raw', 'whsec']],
  ];

  let fieldCount = 0;
  // A labelled control (or a group of inputs) with a slot for the API's
  // error about it.
  function formField(caption, control, cls) {
    const id = 'field-' + (++fieldCount);
    const error = h('div', { class: 'form-error', id: id + '-error', role: 'alert' });
    const inputs = control.matches('input, select, textarea') ? [control] : control.querySelectorAll('input');
    inputs.forEach((i) => i.setAttribute('aria-describedby', error.id));
    control.id = id;
    const label = inputs[0] === control ? h('label', { for: id }, caption) : h('span', { class: 'caption' }, caption);
    const node = h('div', { class: 'field ' + (cls || '') }, label, control, error);
    node.error = error;
    return node;
  }

  // Shows an API error by the field its message names ("verification.
  // tolerance_seconds must be ..."), else in `general`.
  function showFieldError(err, fields, general) {
    const key = Object.keys(fields).sort((a, b) => b.length - a.length)
      .find((k) => err.message.startsWith(k) && /^[\s.:]/.test(err.message.slice(k.length)));
    const field = key && !fields[key].hidden ? fields[key] : null;
    (field ? field.error : general).textContent = err.message;
    if (field) field.querySelector('input, select, textarea').focus();
  }

  // The form of a new entrypoint (ep null) or of an existing one. Secrets and
  // Meta's verify token are write-only: the fields start empty, and an edit
  // sends the verification (or handshake) only when it changed or a secret
  // was typed, so what is set stays set.
  function entrypointForm(webhookId, ep, onSaved, onCancel) {
    const vs = ep ? ep.verification_settings || {} : {};
    const input = (props) => h('input', { autocomplete: 'off', spellcheck: 'false', ...props });
    const select = (name, values, current) => h('select', { name },
      values.map(([value, text]) => h('option', { value, selected: value === current }, text)));

    const name = input({ type: 'text', name: 'name', maxlength: 200, placeholder: ep ? null : 'optional', value: ep ? ep.name : '' });
    const active = h('input', { type: 'checkbox', name: 'active', checked: ep ? ep.active : true });
    const scheme = select('scheme', [['none', 'none: accept every request'], ['custom', 'custom'],
      ...PRESETS.map((p) => [p, p])], ep ? ep.verification : 'none');
    const secretList = h('div', { class: 'secret-list' });
    const secretInputs = [];
    const addSecret = h('button', { type: 'button', class: 'btn btn-small' }, 'Add a secret (rotation)');
    function newSecret() {
      const i = h('input', { type: 'password', name: 'secret', maxlength: 256, autocomplete: 'new-password',
        'aria-label': secretInputs.length ? `Secret ${secretInputs.length + 1} (older)` : 'Secret (newest)',
        placeholder: !secretInputs.length && vs.secret_count ? `unchanged (${vs.secret_count} set)` : null });
      if (secretInputs.length) i.setAttribute('aria-describedby', secretInputs[0].getAttribute('aria-describedby'));
      secretInputs.push(i);
      secretList.append(i);
      addSecret.hidden = secretInputs.length >= MAX_SECRETS;
      return i;
    }
    addSecret.addEventListener('click', () => newSecret().focus());
    newSecret();
    const tolerance = input({ type: 'number', name: 'tolerance_seconds', step: 1, placeholder: '300', value: vs.tolerance_seconds ?? '' });
    const publicUrl = input({ type: 'url', name: 'public_url', maxlength: 512, placeholder: 'https://hooks.example.com', value: vs.public_url || '' });
    const custom = {};
    for (const [key, , placeholder] of CUSTOM_TEXT) custom[key] = input({ type: 'text', name: key, maxlength: 256, placeholder, value: vs[key] || '' });
    for (const [key, , values] of CUSTOM_CHOICES) custom[key] = select(key, values.map((v) => [v, v]), vs[key] || values[0]);
    const handshake = select('handshake', [['', 'none'], ...HANDSHAKES.map((k) => [k, k])], ep && ep.handshake ? ep.handshake.kind : '');
    const verifyToken = h('input', { type: 'password', name: 'verify_token', maxlength: 256, autocomplete: 'new-password',
      placeholder: ep && ep.handshake && ep.handshake.kind === 'meta' ? 'unchanged' : null });
    const respond = h('input', { type: 'checkbox', name: 'custom_response', checked: Boolean(ep && ep.response) });
    const status = input({ type: 'number', name: 'response_status', step: 1, placeholder: '200', value: ep && ep.response ? ep.response.status : '' });
    const contentType = input({ type: 'text', name: 'response_content_type', maxlength: 100, placeholder: 'text/plain; charset=utf-8', value: ep && ep.response ? ep.response.content_type : '' });
    const body = h('textarea', { name: 'response_body', rows: 2, maxlength: 4096, spellcheck: false }, ep && ep.response ? ep.response.body : '');

    // The fields, by the name the API's errors give them.
    const fields = {
      name: formField('Name', name),
      'verification.scheme': formField('Verification', scheme),
      'verification.secret': formField(ep ? 'Secrets (write-only: type them again to change the verification)'
        : 'Secrets (write-only; the newest first)', h('div', { class: 'secrets' }, secretList, addSecret), 'wide'),
      'verification.tolerance_seconds': formField('Timestamp tolerance (seconds)', tolerance),
      'verification.public_url': formField('Public URL (the scheme, host and path prefix senders call)', publicUrl),
      handshake: formField('Handshake (the scheme\u2019s own)', handshake),
      'handshake.verify_token': formField('Meta verify token (write-only)', verifyToken),
      'response.status': formField('Response status', status),
      'response.content_type': formField('Response content type', contentType),
      'response.body': formField('Response body (up to 4096 bytes)', body, 'wide'),
    };
    for (const [key, caption] of [...CUSTOM_TEXT, ...CUSTOM_CHOICES]) {
      fields['verification.' + key] = formField(caption, custom[key], key === 'content' ? 'wide' : '');
    }
    fields['verification.secrets'] = fields['verification.secret'];
    fields['handshake.kind'] = fields.handshake;
    const customFields = [...CUSTOM_TEXT, ...CUSTOM_CHOICES].map(([key]) => fields['verification.' + key]);
    const responseFields = [fields['response.status'], fields['response.content_type'], fields['response.body']];
    const error = h('div', { class: 'form-error wide', role: 'alert' });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, ep ? 'Save entrypoint' : 'Create entrypoint');

    function showFields() {
      const s = scheme.value;
      fields['verification.secret'].hidden = fields['verification.tolerance_seconds'].hidden = s === 'none';
      fields['verification.public_url'].hidden = s !== 'twilio' && s !== 'custom' && !publicUrl.value;
      customFields.forEach((f) => { f.hidden = s !== 'custom'; });
      fields['handshake.verify_token'].hidden = handshake.value !== 'meta';
      responseFields.forEach((f) => { f.hidden = !respond.checked; });
    }
    [scheme, handshake, respond].forEach((c) => c.addEventListener('change', showFields));
    showFields();

    // The verification as the API takes it, without its secrets.
    function verification() {
      const v = { scheme: scheme.value };
      if (v.scheme === 'none') return v;
      if (tolerance.value.trim() !== '') v.tolerance_seconds = Number(tolerance.value);
      if (!fields['verification.public_url'].hidden && publicUrl.value.trim()) v.public_url = publicUrl.value.trim();
      if (v.scheme === 'custom') {
        for (const [key] of CUSTOM_TEXT) if (custom[key].value !== '') v[key] = custom[key].value;
        for (const [key] of CUSTOM_CHOICES) v[key] = custom[key].value;
      }
      return v;
    }
    const initial = { verification: JSON.stringify(verification()), handshake: handshake.value };

    function requestBody() {
      const out = {};
      if (ep ? name.value !== ep.name : name.value.trim()) out.name = name.value;
      if (!ep || active.checked !== ep.active) out.active = active.checked;
      const v = verification();
      const changed = ep ? JSON.stringify(v) !== initial.verification : v.scheme !== 'none';
      const secrets = secretInputs.map((i) => i.value).filter((s) => s !== '');
      if (secrets.length && v.scheme !== 'none') v.secrets = secrets;
      if (changed || v.secrets) out.verification = v;
      if (ep ? handshake.value !== initial.handshake || verifyToken.value : handshake.value) {
        out.handshake = handshake.value ? { kind: handshake.value } : null;
        if (handshake.value === 'meta' && verifyToken.value) out.handshake.verify_token = verifyToken.value;
      }
      if (respond.checked) {
        out.response = { body: body.value };
        if (status.value !== '') out.response.status = Number(status.value);
        if (contentType.value.trim()) out.response.content_type = contentType.value.trim();
      } else if (ep && ep.response) {
        out.response = null;
      }
      return out;
    }

    // Write-only values leave the page once sent.
    function forgetSecrets() {
      secretInputs.splice(1).forEach((i) => i.remove());
      secretInputs[0].value = verifyToken.value = '';
      addSecret.hidden = false;
    }

    const form = h('form', { class: 'grid', 'aria-label': ep ? 'Entrypoint ' + ep.name : 'New entrypoint' },
      ep ? h('h2', { class: 'wide' }, 'Entrypoint \u201c' + ep.name + '\u201d') : null,
      fields.name, h('label', { class: 'field check' }, active, h('span', null, 'Active')),
      fields['verification.scheme'], fields['verification.tolerance_seconds'],
      fields['verification.secret'], fields['verification.public_url'], customFields,
      fields.handshake, fields['handshake.verify_token'],
      h('label', { class: 'field check wide' }, respond, h('span', null, 'Answer stored events with a custom response')),
      responseFields, error,
      h('div', { class: 'form-actions wide' }, submit,
        h('button', { type: 'button', class: 'btn', onclick: () => { forgetSecrets(); if (onCancel) onCancel(); else wrapper.hidden = true; } }, 'Cancel')));
    const wrapper = ep ? form : h('div', { class: 'card-body entrypoint-form' }, form);

    form.addEventListener('submit', (e) => {
      e.preventDefault();
      error.textContent = '';
      Object.values(fields).forEach((f) => { f.error.textContent = ''; });
      const path = webhookPath(webhookId) + '/entrypoints' + (ep ? '/' + encodeURIComponent(ep.id) : '');
      const request = requestBody();
      if (ep && Object.keys(request).length === 0) {
        onCancel();
        showNotice('Nothing changed.', 'ok');
        return;
      }
      act(submit, async () => {
        let saved;
        try {
          saved = await api(ep ? 'PATCH' : 'POST', path, request);
        } catch (err) {
          if (err.status !== 401) showFieldError(err, fields, error);
          return;
        }
        forgetSecrets();
        showNotice(`Entrypoint \u201c${saved.name}\u201d ${ep ? 'saved' : 'created'}.`, 'ok');
        if (onCancel) {
          onCancel();
        } else {
          form.reset();
          showFields();
          wrapper.hidden = true;
        }
        await onSaved();
      });
    });
    return wrapper;
  }

  // ---------------------------------------------------------------------------
  // Targets

  function breakerCell(t) {
    if (!t.breaker) return h('span', { class: 'muted' }, 'none');
    const b = t.breaker;
    const label = { closed: 'closed', open: 'open', half_open: 'half-open' }[b.state] || b.state;
    const detail = b.state === 'open' ? `probe in ${Math.ceil(b.retry_in_ms / 1000)} s`
      : b.consecutive_failures > 0 ? `${b.consecutive_failures} failures in a row` : null;
    return [chip(b.state, label), detail ? h('span', { class: 'cell-sub' }, detail) : null];
  }

  // active / inactive / disabled (gone or failing), and what waits: a FIFO
  // target's oldest waiting delivery holds the others behind it.
  function stateCell(t) {
    const state = t.state || (t.active ? 'active' : 'inactive');
    const label = state === 'disabled' ? `disabled: ${t.disabled_reason}` : state;
    const parts = [chip(state, label)];
    if (t.ordering === 'fifo') {
      parts.push(h('span', { class: 'cell-sub' }, 'FIFO'));
      const w = t.oldest_waiting;
      if (w && w.status === 'retrying') {
        parts.push(h('span', { class: 'cell-sub', 'data-blocked-by': w.delivery_id },
          `blocked by delivery ${w.delivery_id.slice(0, 8)} (${w.attempts} attempts)`));
      }
    }
    if (t.oldest_pending_age_seconds >= 60) {
      parts.push(h('span', { class: 'cell-sub bad-text' },
        `oldest due for ${Math.round(t.oldest_pending_age_seconds / 60)} min`));
    }
    return parts;
  }

  function lastErrorCell(t) {
    const f = t.last_failure;
    if (!f) return h('span', { class: 'muted' }, 'none');
    return [h('span', { class: 'cell-error' }, attemptOutcome(f)), h('span', { class: 'cell-sub' }, time(f.at))];
  }

  // What a target subscribes to, reshapes and how fast it is sent to.
  function routingSummary(t) {
    if (!t) return null;
    const parts = [];
    if (t.filter && t.filter.event_types) parts.push(t.filter.event_types.join(', '));
    if (t.filter && t.filter.jq) parts.push('jq filter');
    if (t.transform) parts.push('transform');
    if (t.rate_limit) parts.push(`\u2264 ${t.rate_limit.per_second}/s`);
    return parts.length ? h('span', { class: 'cell-sub routing' }, parts.join(' \u00b7 ')) : null;
  }

  function targetTable(webhookId, targets, routing, refresh) {
    if (targets.length === 0) {
      return h('p', { class: 'empty' }, 'No targets: events are stored but go nowhere. Add one to deliver them.');
    }
    const rows = targets.map((t) => {
      const d = t.deliveries;
      // A disabled target is enabled with the same write as an inactive one.
      const disabled = t.state === 'disabled';
      const turnOn = disabled || !t.active;
      const toggle = h('button', { type: 'button', class: 'btn btn-small' },
        disabled ? 'Enable' : t.active ? 'Deactivate' : 'Activate');
      toggle.addEventListener('click', () => act(toggle, async () => {
        await api('PATCH', `${webhookPath(webhookId)}/targets/${encodeURIComponent(t.target_id)}`, { active: turnOn });
        showNotice(`Target \u201c${t.target_name}\u201d ${turnOn ? (disabled ? 'enabled: its waiting deliveries resume' : 'activated') : 'deactivated: its deliveries wait'}.`, 'ok');
        await refresh();
      }));
      const replayButton = h('button', { type: 'button', class: 'btn btn-small', disabled: d.failed === 0 }, 'Replay failed');
      const routingButton = h('button', { type: 'button', class: 'btn btn-small' }, 'Routing');
      routingButton.addEventListener('click', () => act(routingButton,
        () => editRouting(webhookId, routing.get(t.target_id), refresh)));
      replayButton.addEventListener('click', () => act(replayButton,
        () => replay(webhookId, t.target_id, `target \u201c${t.target_name}\u201d`, refresh)));
      const labelled = (label, cls, ...content) => h('td', { class: cls, 'data-label': label }, content);
      return h('tr', { 'data-target-id': t.target_id },
        td('lead', h('strong', null, t.target_name), h('span', { class: 'cell-sub' }, t.target_type),
          routingSummary(routing.get(t.target_id))),
        td(null, stateCell(t)),
        td(null, breakerCell(t)),
        labelled('waiting', 'num', count(d.pending + d.retrying)),
        labelled('failed', 'num' + (d.failed > 0 ? ' bad-text' : ''), count(d.failed)),
        td('lead', lastErrorCell(t)),
        td('actions', toggle, routingButton, replayButton));
    });
    return table([
      { title: 'Target' }, { title: 'State' }, { title: 'Breaker' },
      { title: 'Waiting', cls: 'num' }, { title: 'Failed', cls: 'num' },
      { title: 'Last error' }, { title: '', cls: 'actions' },
    ], rows, true);
  }

  // Replays failed deliveries (of one target, or the whole webhook) after
  // showing how many a dry run counts.
  async function replay(webhookId, targetId, what, refresh) {
    const body = { status: 'failed', dry_run: true };
    if (targetId) body.target_id = targetId;
    const dry = await api('POST', webhookPath(webhookId) + '/replay', body);
    if (dry.count === 0) {
      showNotice(`No failed deliveries to replay for ${what}.`, 'ok');
      return;
    }
    const n = dry.count === 1 ? '1 failed delivery' : `${dry.count} failed deliveries`;
    const ok = await confirmDialog('Replay dead letters',
      `${n} of ${what} would be replayed. Each starts a new attempt series with the full retry budget.`,
      `Replay ${dry.count}`);
    if (!ok) return;
    body.dry_run = false;
    const done = await api('POST', webhookPath(webhookId) + '/replay', body);
    showNotice(`Replayed ${done.count === 1 ? '1 delivery' : done.count + ' deliveries'}.`, 'ok');
    await refresh();
  }

  // The filter, transform and rate-limit fields of a target form, and the
  // body fields they make (null clears one).
  function routingFields(t) {
    const types = h('input', { type: 'text', name: 'event_types', placeholder: 'push, pull_request.*', autocomplete: 'off',
      value: t && t.filter && t.filter.event_types ? t.filter.event_types.join(', ') : '' });
    const filter = h('textarea', { name: 'filter_jq', rows: 2, placeholder: '.body.ref == "refs/heads/main"', spellcheck: false },
      t && t.filter && t.filter.jq ? t.filter.jq : '');
    const transform = h('textarea', { name: 'transform_jq', rows: 3, placeholder: '{ref: .body.ref}', spellcheck: false },
      t && t.transform ? t.transform.jq : '');
    const rate = h('input', { type: 'number', name: 'rate_limit', min: 0.01, max: 10000, step: 'any', placeholder: 'no limit',
      value: t && t.rate_limit ? t.rate_limit.per_second : '' });
    return {
      nodes: [
        h('label', { class: 'field wide' }, h('span', null, 'Event types (comma-separated; empty: all)'), types),
        h('label', { class: 'field wide' }, h('span', null, 'Filter (jq, true to deliver)'), filter),
        h('label', { class: 'field wide' }, h('span', null, 'Transform (jq, its output is the body sent)'), transform),
        h('label', { class: 'field' }, h('span', null, 'Rate limit (per second)'), rate),
      ],
      body() {
        const list = types.value.split(',').map((s) => s.trim()).filter((s) => s);
        const f = {};
        if (list.length) f.event_types = list;
        if (filter.value.trim()) f.jq = filter.value;
        return {
          filter: Object.keys(f).length ? f : null,
          transform: transform.value.trim() ? { jq: transform.value } : null,
          rate_limit: rate.value ? { per_second: Number(rate.value) } : null,
        };
      },
    };
  }

  // A target's routing: edit and save (jq's error shown as the API gives
  // it), or test it on a stored event (POST .../preview).
  async function editRouting(webhookId, t, refresh) {
    if (!t) return;
    const fields = routingFields(t);
    const error = h('div', { class: 'form-error wide', role: 'alert' });
    const eventId = h('input', { type: 'text', name: 'event_id', placeholder: 'event id', autocomplete: 'off' });
    const result = h('pre', { class: 'preview wide', 'aria-label': 'Preview result' });
    result.hidden = true;
    const save = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save routing');
    const test = h('button', { type: 'button', class: 'btn' }, 'Test on this event');
    const dialog = h('dialog', { class: 'routing-dialog', 'aria-label': 'Routing of ' + t.name });
    const form = h('form', { class: 'grid', method: 'dialog' },
      h('h2', { class: 'wide' }, 'Routing of \u201c' + t.name + '\u201d'),
      fields.nodes, error,
      h('label', { class: 'field wide' }, h('span', null, 'Test the saved routing on a stored event'), eventId),
      h('div', { class: 'form-actions wide' }, test), result,
      h('div', { class: 'form-actions wide' }, save,
        h('button', { type: 'button', class: 'btn', onclick: () => dialog.close() }, 'Close')));
    dialog.append(form);
    document.body.append(dialog);
    dialog.addEventListener('close', () => dialog.remove());
    const path = `${webhookPath(webhookId)}/targets/${encodeURIComponent(t.id)}`;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      error.textContent = '';
      act(save, async () => {
        try {
          await api('PATCH', path, fields.body());
          showNotice(`Routing of \u201c${t.name}\u201d saved.`, 'ok');
          dialog.close();
          await refresh();
        } catch (err) {
          if (err.status === 401) return;
          error.textContent = err.message;
        }
      });
    });
    test.addEventListener('click', () => act(test, async () => {
      result.hidden = false;
      try {
        const p = await api('POST', path + '/preview', { event_id: eventId.value.trim() });
        const lines = [`event type: ${p.event_type === null ? '(none)' : p.event_type}`,
          `matches: ${p.matched ? 'yes' : 'no'}${p.filter_error ? ' (filter failed: ' + p.filter_error + ')' : ''}`];
        if (p.transformed) {
          lines.push(p.transform_error ? 'transform failed: ' + p.transform_error
            : 'body sent:\n' + JSON.stringify(p.body, null, 2));
        }
        result.textContent = lines.join('\n');
      } catch (err) {
        if (err.status === 401) return;
        result.textContent = err.message;
      }
    }));
    dialog.showModal();
  }

  function newTargetForm(webhookId, onCreated) {
    const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
    const type = h('select', { name: 'type' }, ['http', 'slack', 'database', 'log', 'redis_stream', 'nats', 'amqp', 'pull'].map((t) => h('option', { value: t }, t)));
    // The queue types: a broker URL, where on it (stream, subject, routing key), a password.
    const queueTypes = { redis_stream: ['Stream', 'stream', 'redis://host:6379'], nats: ['Subject', 'subject', 'nats://host:4222'], amqp: ['Routing key', 'routing_key', 'amqp://host:5672/'] };
    const brokerUrl = h('input', { type: 'text', name: 'broker_url', maxlength: 2048, autocomplete: 'off' });
    const queueName = h('input', { type: 'text', name: 'queue_name', maxlength: 255, autocomplete: 'off' });
    const brokerUser = h('input', { type: 'text', name: 'broker_username', maxlength: 1024, autocomplete: 'off' });
    const brokerPassword = h('input', { type: 'password', name: 'broker_password', maxlength: 1024, autocomplete: 'new-password' });
    const url = h('input', { type: 'url', name: 'url', placeholder: 'https://example.com/hook', maxlength: 2048, autocomplete: 'off' });
    const method = h('select', { name: 'method' }, ['POST', 'PUT', 'PATCH'].map((m) => h('option', { value: m }, m)));
    const slackUrl = h('input', { type: 'url', name: 'webhook_url', placeholder: 'https://hooks.slack.com/services/…', maxlength: 2048, autocomplete: 'off' });
    const retries = h('input', { type: 'number', name: 'max_retries', min: 0, max: 20, value: 5, required: true });
    const concurrency = h('input', { type: 'number', name: 'max_concurrency', min: 1, max: 64, value: 4, required: true });
    const active = h('input', { type: 'checkbox', name: 'active', checked: true });
    const routing = routingFields(null);
    const error = h('div', { class: 'form-error wide', role: 'alert' });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create target');

    const urlField = h('label', { class: 'field wide' }, h('span', null, 'URL'), url);
    const methodField = h('label', { class: 'field' }, h('span', null, 'Method'), method);
    const slackField = h('label', { class: 'field wide' }, h('span', null, 'Slack webhook URL'), slackUrl);
    const brokerUrlField = h('label', { class: 'field wide' }, h('span', null, 'Broker URL'), brokerUrl);
    const queueNameLabel = h('span', null, 'Stream');
    const queueNameField = h('label', { class: 'field' }, queueNameLabel, queueName);
    const brokerUserField = h('label', { class: 'field' }, h('span', null, 'Broker user (optional)'), brokerUser);
    const brokerPasswordField = h('label', { class: 'field' }, h('span', null, 'Broker password (optional)'), brokerPassword);
    const retryFields = [
      h('label', { class: 'field' }, h('span', null, 'Max retries'), retries),
      h('label', { class: 'field' }, h('span', null, 'Max concurrent attempts'), concurrency),
    ];
    function showFields() {
      const t = type.value;
      urlField.hidden = methodField.hidden = t !== 'http';
      slackField.hidden = t !== 'slack';
      url.required = t === 'http';
      slackUrl.required = t === 'slack';
      const queue = queueTypes[t];
      brokerUrlField.hidden = queueNameField.hidden = brokerUserField.hidden = brokerPasswordField.hidden = !queue;
      brokerUrl.required = Boolean(queue);
      queueName.required = t === 'redis_stream' || t === 'nats';
      if (queue) {
        queueNameLabel.textContent = queue[0];
        brokerUrl.placeholder = queue[2];
      }
      retryFields.forEach((f) => { f.hidden = t === 'database' || t === 'log'; });
    }
    type.addEventListener('change', showFields);
    showFields();

    const form = h('form', { class: 'grid', 'aria-label': 'New target' },
      h('label', { class: 'field' }, h('span', null, 'Name'), name),
      h('label', { class: 'field' }, h('span', null, 'Type'), type),
      urlField, methodField, slackField, brokerUrlField, queueNameField, brokerUserField, brokerPasswordField,
      retryFields, routing.nodes,
      h('label', { class: 'field check' }, active, h('span', null, 'Active')),
      error,
      h('div', { class: 'form-actions wide' }, submit,
        h('button', { type: 'button', class: 'btn', onclick: () => { wrapper.hidden = true; } }, 'Cancel')));
    const wrapper = h('div', { class: 'card-body target-form' }, form);

    form.addEventListener('submit', (e) => {
      e.preventDefault();
      error.textContent = '';
      const body = { name: name.value, type: type.value, active: active.checked, config: {}, ...routing.body() };
      if (type.value === 'http') body.config = { url: url.value, method: method.value };
      if (type.value === 'slack') body.config = { webhook_url: slackUrl.value };
      const queue = queueTypes[type.value];
      if (queue) {
        body.config = { url: brokerUrl.value };
        if (queueName.value) body.config[queue[1]] = queueName.value;
        if (brokerUser.value) body.config.username = brokerUser.value;
        if (brokerPassword.value) body.config.password = brokerPassword.value;
      }
      if (type.value !== 'database' && type.value !== 'log') {
        body.max_concurrency = Number(concurrency.value);
        body.retry = { max_retries: Number(retries.value) };
      }
      act(submit, async () => {
        try {
          const created = await api('POST', webhookPath(webhookId) + '/targets', body);
          showNotice(`Target \u201c${created.name}\u201d created.`, 'ok');
          form.reset();
          showFields();
          wrapper.hidden = true;
          await onCreated();
        } catch (err) {
          if (err.status === 401) return;
          error.textContent = err.message;
        }
      });
    });
    return wrapper;
  }

  // ---------------------------------------------------------------------------
  // Event log

  function deliveryChips(deliveries) {
    if (deliveries.length === 0) return h('span', { class: 'muted' }, 'no target');
    return h('div', { class: 'chips' }, deliveries.map((d) =>
      chip(d.status, d.status, d.target_name || shortId(d.target_id).textContent)));
  }

  function eventTable(webhookId, events, status) {
    if (events.length === 0) {
      return h('p', { class: 'empty' }, status
        ? `No events with a ${status} delivery.`
        : 'No events yet. POST one to an entrypoint URL above.');
    }
    const rows = events.map((e) => {
      const href = `#/webhooks/${encodeURIComponent(webhookId)}/events/${encodeURIComponent(e.id)}`;
      return h('tr', { 'data-event-id': e.id },
        td(null, link(href, h('span', null, time(e.received_at)), 'event-link'), h('span', { class: 'cell-sub mono' }, e.id.slice(0, 8))),
        td(null, e.event_type ? h('span', { class: 'mono' }, e.event_type) : h('span', { class: 'muted' }, 'none')),
        td('hide-narrow', e.method, h('span', { class: 'cell-sub' }, e.content_type || 'no content type')),
        td('num hide-narrow', bytes(e.body_size)),
        td(null, deliveryChips(e.deliveries)));
    });
    return table([
      { title: 'Received' }, { title: 'Type' }, { title: 'Request', cls: 'hide-narrow' },
      { title: 'Size', cls: 'num hide-narrow' }, { title: 'Deliveries' },
    ], rows);
  }

  function pager(state, nextCursor, reload) {
    if (state.cursors.length === 1 && !nextCursor) return null;
    const newer = h('button', { type: 'button', class: 'btn btn-small', disabled: state.cursors.length === 1 }, 'Newer');
    newer.addEventListener('click', () => { state.cursors.pop(); reload(); });
    const older = h('button', { type: 'button', class: 'btn btn-small', disabled: !nextCursor }, 'Older');
    older.addEventListener('click', () => { state.cursors.push(nextCursor); reload(); });
    return h('div', { class: 'pager' }, newer, older);
  }

  // ---------------------------------------------------------------------------
  // One event: the request, each delivery and each attempt

  async function showEvent(webhookId, eventId) {
    const mine = view;
    const webhook = await api('GET', webhookPath(webhookId));
    if (mine !== view) return;
    setCrumbs({ text: 'Webhooks', href: '#/' },
      { text: webhook.name, href: '#/webhooks/' + encodeURIComponent(webhookId) },
      { text: 'Event ' + eventId.slice(0, 8) });
    const path = `${webhookPath(webhookId)}/events/${encodeURIComponent(eventId)}`;
    const requestBody = h('div', { class: 'card-body' });
    const headersBody = h('div', { class: 'card-body flush' });
    const bodyBody = h('div', { class: 'card-body flush' });
    const deliveriesBody = h('div', { class: 'card-body flush' });
    const bodyHint = h('span', { class: 'hint' });

    const refreshButton = h('button', { type: 'button', class: 'btn', onclick: () => act(refreshButton, refresh) }, 'Refresh');
    const redeliver = h('button', { type: 'button', class: 'btn' }, 'Redeliver');
    redeliver.hidden = !portalMay('operate');
    redeliver.addEventListener('click', () => act(redeliver, async () => {
      const ok = await confirmDialog('Redeliver event',
        'Send this event again to every active target, as new deliveries?', 'Redeliver');
      if (!ok) return;
      const res = await api('POST', path + '/redeliver', {});
      const n = res && res.deliveries ? res.deliveries.length : 0;
      showNotice(`Redelivering to ${n === 1 ? '1 target' : n + ' targets'}.`, 'ok');
      await refresh();
    }));

    fill(app,
      pageHead('Event', h('span', { class: 'mono' }, eventId), redeliver, refreshButton),
      card('Request', null, requestBody),
      card('Deliveries', null, deliveriesBody),
      card('Body', { tools: bodyHint }, bodyBody),
      card('Headers', null, headersBody));

    let rendered = false;
    async function refresh() {
      const e = await api('GET', path);
      if (mine !== view) return;
      if (!rendered) {
        // The request never changes once stored; render it once.
        renderRequest(requestBody, e);
        fill(headersBody, e.headers.length
          ? table([{ title: 'Name', cls: 'shrink' }, { title: 'Value' }],
            e.headers.map(([n, v]) => h('tr', null, td('mono shrink', n), td(null, h('span', { class: 'mono' }, v)))))
          : h('p', { class: 'empty' }, 'No headers.'));
        renderBody(bodyBody, bodyHint, e);
        rendered = true;
      }
      fill(deliveriesBody, deliveryList(webhookId, e.deliveries, refresh));
    }
    await refresh();
    startRefresh(refresh);
  }

  function renderRequest(body, e) {
    const row = (label, value) => [h('dt', null, label), h('dd', null, value)];
    fill(body, h('dl', { class: 'fields' },
      row('Received', time(e.received_at)),
      row('Event type', e.event_type ? h('span', { class: 'mono' }, e.event_type) : h('span', { class: 'muted' }, 'none')),
      row('Request', h('span', { class: 'mono' }, `${e.method} ${e.path}${e.query ? '?' + e.query : ''}`)),
      row('Content type', e.content_type || h('span', { class: 'muted' }, 'none')),
      row('Size', bytes(e.body_size)),
      row('From', e.remote_addr || h('span', { class: 'muted' }, 'unknown')),
      row('Entrypoint', h('span', { class: 'mono' }, e.entrypoint_id)),
      e.idempotency_key ? row('Idempotency key', h('span', { class: 'mono' }, e.idempotency_key)) : null));
  }

  function renderBody(container, hint, e) {
    if (e.body_size === 0) {
      hint.textContent = '';
      fill(container, h('p', { class: 'empty' }, 'Empty body.'));
      return;
    }
    let text = e.body;
    let label = e.body_encoding === 'base64' ? 'binary, shown as base64' : 'as received';
    if (e.body_encoding === 'text' && /json/i.test(e.content_type)) {
      try {
        text = JSON.stringify(JSON.parse(e.body), null, 2);
        label = 'JSON, pretty-printed';
      } catch (err) {
        label = 'not valid JSON, as received';
      }
    }
    hint.textContent = label;
    fill(container, h('pre', { class: 'body', 'aria-label': 'Event body' }, text));
  }

  function deliveryList(webhookId, deliveries, refresh) {
    if (deliveries.length === 0) {
      return h('p', { class: 'empty' }, 'No deliveries: the webhook had no active target when this event arrived.');
    }
    return deliveries.map((d) => {
      const retry = d.status === 'failed' && !d.target_deleted && portalMay('operate')
        ? h('button', { type: 'button', class: 'btn btn-small' }, 'Retry')
        : null;
      if (retry) {
        retry.addEventListener('click', () => act(retry, async () => {
          await api('POST', `${webhookPath(webhookId)}/deliveries/${encodeURIComponent(d.id)}/retry`);
          showNotice('Delivery restarted with a fresh retry budget.', 'ok');
          await refresh();
        }));
      }
      const facts = [];
      facts.push(`${d.attempts} ${d.attempts === 1 ? 'attempt' : 'attempts'}`);
      if (d.failure_reason) facts.push(`reason ${d.failure_reason}`);
      if (d.next_attempt_at && d.status === 'retrying') facts.push('next attempt ' + time(d.next_attempt_at).textContent);
      const head = h('div', { class: 'delivery-head' },
        h('div', { class: 'grow' },
          h('strong', null, d.target_name || d.target_id),
          h('span', { class: 'muted' }, ` · ${d.target_type || 'unknown'}${d.target_deleted ? ' · deleted' : ''}`),
          h('span', { class: 'cell-sub' }, facts.join(' · '))),
        chip(d.status, d.status), retry);
      const attempts = d.results.length === 0
        ? h('p', { class: 'empty' }, 'No attempt yet.')
        : table([
          { title: '#', cls: 'num' }, { title: 'Time' }, { title: 'Outcome' },
          { title: 'Duration', cls: 'num hide-narrow' }, { title: 'Response', cls: 'hide-narrow' },
        ], d.results.map((a) => h('tr', null,
          td('num', String(a.attempt)),
          td(null, time(a.created_at)),
          td(a.success ? null : 'bad-text cell-error', attemptOutcome(a)),
          td('num hide-narrow', `${a.duration_ms} ms`),
          td('hide-narrow', a.response_body
            ? h('details', { class: 'response' }, h('summary', null, bytes(a.response_body.length)), h('pre', null, a.response_body))
            : h('span', { class: 'muted' }, '—')))));
      return h('section', { class: 'delivery', 'data-delivery-id': d.id, 'data-status': d.status }, head, attempts);
    });
  }

  // ---------------------------------------------------------------------------
  // Router

  function route() {
    view += 1;
    clearInterval(refreshTimer);
    refreshTimer = null;
    onResize = null;
    // #/path/parts?query: only the webhook list takes a query (its page's cursor).
    const [where, query] = location.hash.replace(/^#\/?/, '').split('?');
    const parts = where.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] === 'portal' && parts.length === 2) return openPortal(parts[1]);
    const inPortal = portal();
    if (!inPortal && !sessionStorage.getItem(TOKEN_KEY)) return renderSignIn();
    signOutButton.hidden = false;
    // A portal session shows its one webhook: anything else leads there.
    if (inPortal && (parts[0] !== 'webhooks' || parts[1] !== inPortal.webhook_id)) {
      location.replace('#/webhooks/' + encodeURIComponent(inPortal.webhook_id));
      return;
    }
    let shown;
    if (parts[0] === 'webhooks' && parts.length === 2) shown = showWebhook(parts[1]);
    else if (parts[0] === 'webhooks' && parts.length === 4 && parts[2] === 'events') shown = showEvent(parts[1], parts[3]);
    else shown = showWebhookList(new URLSearchParams(query || '').get('cursor'));
    shown.catch((e) => {
      if (e instanceof ApiError && e.status === 404) {
        fill(app, h('p', { class: 'empty' }, e.message + ' ', link('#/', 'Back to the webhooks')));
        return;
      }
      reportError(e);
    });
  }

  signOutButton.addEventListener('click', () => {
    clearNotice();
    signOut();
  });
  window.addEventListener('hashchange', () => {
    if (notice.classList.contains('error')) clearNotice();  // it was about the page left
    route();
  });
  route();
})();
