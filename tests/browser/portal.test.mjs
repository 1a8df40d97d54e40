// The customer portal end to end: the real daemon (WEBHOOKER_BIN) with
// --portal-frame-ancestors naming one origin, Debian's headless Chromium
// driven by playwright-core, and two small pages on other ports that frame
// the console.
//
// Scenario: two webhooks, each with a failed delivery; a portal link (operate)
// for the first opens the console limited to it: its deliveries are shown,
// one is retried (and delivered once the receiver is up), and nothing of the
// second webhook is shown or reachable, from the page or its session. The
// link fails the second time. The console loads in an iframe of the allowed
// origin (a second link opens the portal there) and is blocked by CSP in an
// iframe of another origin.
//
// Exit codes: 0 passed, 1 failed, 77 skipped (no Chromium or no
// node_modules: scripts/install-deps installs both).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import {
  WAIT_MS, browserPrerequisites, check, freePort, startDaemon, step, stopDaemon, waitFor,
} from './helpers.mjs';

const TOKEN = 'whk_portal-browser-test-token-0123456789';

const { chromium, executable: CHROMIUM, bin } = await browserPrerequisites();

function listen(server, port = 0) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
}

// A page that frames `src` (its query parameter): the customer's own app.
async function startFramer() {
  const server = http.createServer((req, res) => {
    const src = new URL(req.url, 'http://x').searchParams.get('src') || '';
    const attr = src.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>the customer's app</title><h1>Our app</h1>` +
      `<iframe id="portal" src="${attr}" width="1000" height="700"></iframe>`);
  });
  const port = await listen(server);
  return { server, origin: `http://127.0.0.1:${port}` };
}

function startReceiver(port) {
  const received = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
    });
  });
  return listen(server, port).then(() => ({ server, received }));
}



let daemon;
let browser;
let receiver;
const framers = [];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooker-portal-'));
const problems = [];
const refusedFrames = [];

async function run() {
  const allowed = await startFramer();
  const other = await startFramer();
  framers.push(allowed, other);
  daemon = await startDaemon(bin, TOKEN, dataDir, ['--portal-frame-ancestors', allowed.origin]);
  step(`daemon at ${daemon.url}; ${allowed.origin} may frame it, ${other.origin} may not`);

  async function admin(method, p, body) {
    const res = await fetch(daemon.url + '/api/v1' + p, {
      method,
      headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = res.status === 204 ? null : await res.json();
    check(res.ok, `${method} ${p}: ${res.status} ${JSON.stringify(data)}`);
    return data;
  }
  async function waitForStatus(webhookId, status) {
    return waitFor(`a ${status} delivery of ${webhookId}`, async () => {
      const page = await admin('GET', `/webhooks/${webhookId}/deliveries?status=${status}`);
      return page.deliveries.length > 0 ? page.deliveries[0] : null;
    });
  }

  // Two webhooks, each with a delivery that failed (nothing listens yet).
  const receiverPort = await freePort();
  const shop = await admin('POST', '/webhooks', { name: 'shop' });
  const hidden = await admin('POST', '/webhooks', { name: 'hidden-other-tenant' });
  for (const w of [shop, hidden]) {
    await admin('POST', `/webhooks/${w.id}/targets`, {
      name: w.name + '-receiver', type: 'http',
      config: { url: `http://127.0.0.1:${receiverPort}/${w.name}` }, retry: { max_retries: 0 },
    });
    const res = await fetch(daemon.url + w.entrypoints[0].url, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ order: w.name }),
    });
    check(res.status === 200, 'event stored for ' + w.name);
    await waitForStatus(w.id, 'failed');
  }
  step('two webhooks with a failed delivery each');

  browser = await chromium.launchPersistentContext(path.join(dataDir, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  const page = browser.pages()[0] || await browser.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('dialog', (d) => { problems.push(`a ${d.type()} dialog opened: ${d.message()}`); d.dismiss(); });
  page.on('console', (m) => {
    const text = m.text();
    if (/frame-ancestors/.test(text)) refusedFrames.push(text);
    // The refusals below are provoked on purpose: a used link (401), another
    // webhook (404), a route outside the scope (403), a framing refused.
    else if (m.type() === 'error' && !/status of 40[134]/.test(text)) problems.push('console error: ' + text);
  });

  // The portal: the link's secret leaves the URL at once.
  const link = await admin('POST', `/webhooks/${shop.id}/portal-links`, { scopes: ['operate'] });
  check(link.url.startsWith('/#/portal/whp_'), 'a portal URL: ' + link.url);
  await page.goto(daemon.url + link.url);
  await page.locator('h1', { hasText: 'shop' }).waitFor();
  check(!page.url().includes('whp_'), 'the secret left the URL: ' + page.url());
  check(page.url().endsWith('#/webhooks/' + shop.id), 'the portal shows the webhook: ' + page.url());
  const cookies = await browser.cookies();
  check(cookies.length === 1 && cookies[0].httpOnly && cookies[0].sameSite === 'Strict',
    'one HttpOnly, SameSite=Strict session cookie: ' + JSON.stringify(cookies.map((c) => ({ ...c, value: '…' }))));
  check(await page.evaluate(() => document.cookie) === '', 'the page script cannot read the cookie');
  check(await page.locator('button', { hasText: 'Add target' }).isHidden(), 'no Add target without manage');
  check(await page.locator('button', { hasText: 'Add entrypoint' }).count() === 0 &&
    await page.locator('.copy-row button', { hasText: 'Edit' }).count() === 0, 'no entrypoint form without manage');
  step('portal opened');

  // Its deliveries, and a retry once the receiver is up.
  const eventRow = page.locator('tr[data-event-id]');
  await eventRow.locator('.chip.failed').waitFor();
  receiver = await startReceiver(receiverPort);
  await eventRow.locator('a.event-link').click();
  const delivery = page.locator('section.delivery');
  await delivery.locator('.chip.failed').waitFor();
  await delivery.locator('button', { hasText: 'Retry' }).click();
  await page.locator('.notice.ok', { hasText: 'Delivery restarted' }).waitFor();
  await waitFor('the retried delivery to be delivered', async () => {
    const refresh = page.locator('.page-head button', { hasText: 'Refresh' });
    if (await refresh.isEnabled()) await refresh.click();
    return (await delivery.locator('.chip.delivered').count()) === 1;
  }, { intervalMs: 250 });
  check(receiver.received.length === 1 && receiver.received[0] === JSON.stringify({ order: 'shop' }),
    'the receiver got the shop event only: ' + JSON.stringify(receiver.received));
  step('retried from the portal and delivered');

  // Nothing of the other webhook: not shown, not routed to, not reachable.
  await page.goto(`${daemon.url}/#/webhooks/${hidden.id}`);
  await page.waitForURL((u) => u.hash === '#/webhooks/' + shop.id);
  await page.locator('h1', { hasText: 'shop' }).waitFor();
  await page.goto(`${daemon.url}/#/`);
  await page.waitForURL((u) => u.hash === '#/webhooks/' + shop.id);
  await page.locator('h1', { hasText: 'shop' }).waitFor();
  const html = await page.content();
  check(!html.includes(hidden.id) && !html.includes('hidden-other-tenant'), 'the page shows nothing of the other webhook');
  const reach = await page.evaluate(async (ids) => {
    const get = async (p) => (await fetch('/api/v1' + p, { credentials: 'same-origin' })).status;
    return { other: await get('/webhooks/' + ids.hidden), list: await get('/webhooks'), own: await get('/webhooks/' + ids.shop) };
  }, { hidden: hidden.id, shop: shop.id });
  check(reach.own === 200 && reach.other === 404 && reach.list === 403, 'the session reaches its webhook only: ' + JSON.stringify(reach));
  step('nothing of the other webhook');

  // The link works once.
  const second = await browser.newPage();
  second.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push('console error: ' + m.text());
  });
  await second.goto(daemon.url + link.url);
  await second.locator('.portal-ended', { hasText: 'already used' }).waitFor();
  check(!second.url().includes('whp_'), 'a refused secret leaves the URL too');
  await second.close();
  step('the link fails the second time');

  // Signing out ends the session.
  await page.click('#sign-out');
  await page.locator('.portal-ended', { hasText: 'Signed out' }).waitFor();
  const after = await page.evaluate(async (id) =>
    (await fetch('/api/v1/webhooks/' + id, { credentials: 'same-origin' })).status, shop.id);
  check(after === 401, 'no session after signing out: ' + after);

  // Embedded: the allowed origin frames the console (a fresh link opens the
  // portal inside it); another origin is refused by CSP.
  const embedded = await admin('POST', `/webhooks/${shop.id}/portal-links`, { scopes: ['read'] });
  await page.goto(`${allowed.origin}/?src=${encodeURIComponent(daemon.url + embedded.url)}`);
  const frame = await waitFor('the console in the allowed frame', async () =>
    page.frames().find((f) => f.url().startsWith(daemon.url)));
  await frame.locator('h1', { hasText: 'shop' }).waitFor();
  // The title comes before the deliveries' page: wait for the rows, not a moment.
  const framedRows = frame.locator('section.delivery, tr[data-event-id]');
  await framedRows.first().waitFor({ timeout: 15000 }).catch(() => {});
  check(await framedRows.count() > 0, 'the framed portal shows the deliveries');
  check(refusedFrames.length === 0, 'the allowed origin was not refused: ' + refusedFrames.join('\n'));
  step('the allowed origin frames the portal');

  await page.goto(`${other.origin}/?src=${encodeURIComponent(daemon.url + '/')}`, { waitUntil: 'load' });
  await waitFor('the CSP refusal of the other origin', async () => refusedFrames.length > 0);
  check(refusedFrames.every((t) => t.includes('frame-ancestors ' + allowed.origin)),
    'refused by the CSP naming only the allowed origin: ' + refusedFrames.join('\n'));
  const framed = page.frames().find((f) => f !== page.mainFrame());
  check(framed, 'the iframe is there');
  const consoleInside = await framed.locator('header.topbar').count().catch(() => 0);
  check(consoleInside === 0, 'nothing of the console loaded in the refused frame: ' + framed.url());
  step('another origin is refused by CSP');

  check(problems.length === 0, 'no page error, script error or dialog:\n' + problems.join('\n'));
  step('passed');
}

let failed = false;
try {
  await run();
} catch (e) {
  failed = true;
  console.error(e.stack || String(e));
  if (problems.length) console.error('page problems:\n' + problems.join('\n'));
  if (daemon) console.error('daemon log:\n' + daemon.log());
} finally {
  if (browser) await browser.close().catch(() => {});
  if (receiver) receiver.server.close();
  for (const f of framers) f.server.close();
  await stopDaemon(daemon);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
