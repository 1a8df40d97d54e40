// The web console end to end: the real daemon (WEBHOOKER_BIN) on a temp data
// folder, Debian's headless Chromium driven by playwright-core, a receiver on
// 127.0.0.1 and curl as the sender.
//
// Scenario: sign in (a wrong token is refused), create a webhook and an http
// target in the page, post an event with curl while the receiver is down and
// watch its delivery fail, start the receiver, replay from the console (the
// dry-run count is shown first) and watch it be delivered; a stored
// <script>alert(1)</script> body is shown as text and runs nothing. An
// entrypoint made in the form verifies GitHub's signature (node's crypto signs
// the test's requests), is edited to a custom scheme and response, refuses a
// bad tolerance by its field with nothing changed, and rotates its secret; a
// Meta entrypoint answers its handshake with the verify token set in the form,
// also after a rename; no secret is ever in the page or an API answer. With
// more webhooks than a page, the list asks the API for pages and for the
// stats of the rows shown only (the test counts the requests); the page's
// cursor is in the URL, so a reload or a link shows the same page. Along the
// way: no CSP violation, no script error, the token never in the page, URL
// or storage other than sessionStorage. Screenshots of every page at 1280 px
// and 390 px go to SCREENSHOT_DIR.
//
// Exit codes: 0 passed, 1 failed, 77 skipped (no Chromium or no
// node_modules: scripts/install-deps installs both).
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import {
  WAIT_MS, browserPrerequisites, check, freePort, startDaemon, step, stopDaemon, waitFor,
} from './helpers.mjs';

const TOKEN = 'whk_console-browser-test-token-0123456789';
const screenshotDir = process.env.SCREENSHOT_DIR || path.join(os.tmpdir(), 'console-screenshots');

const { chromium, executable: CHROMIUM, bin } = await browserPrerequisites();

// --- Helpers -----------------------------------------------------------------

function curl(args) {
  return new Promise((resolve, reject) => {
    execFile('curl', ['-sS', '--max-time', '10', ...args], (err, stdout, stderr) => {
      if (err) reject(new Error(`curl failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

// The admin API, as the test's own client: { status, body }.
async function adminApi(method, p, body) {
  const res = await fetch(daemon.url + '/api/v1' + p, {
    method,
    headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

// A sender: one POST to an entrypoint URL; { status, text }.
async function ingest(url, body, headers) {
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
  return { status: res.status, text: await res.text() };
}

// A receiver that records what it gets and answers 200.
function startReceiver(port) {
  const received = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('thanks');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({ server, received }));
  });
}

// --- The scenario ------------------------------------------------------------

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooker-console-'));
fs.mkdirSync(screenshotDir, { recursive: true });
for (const f of fs.readdirSync(screenshotDir)) if (f.endsWith('.png')) fs.rmSync(path.join(screenshotDir, f));

let daemon;
let browser;
let receiver;
const problems = [];  // page errors, CSP violations, dialogs: each fails the test

async function run() {
  daemon = await startDaemon(bin, TOKEN, dataDir);
  step(`daemon at ${daemon.url}`);

  // The console's own headers, as the browser gets them.
  const head = await curl(['-D', '-', '-o', '/dev/null', daemon.url + '/']);
  check(/content-security-policy: [^\r\n]*script-src 'self'/i.test(head), 'CSP on / ' + head);
  check(/content-security-policy: [^\r\n]*frame-ancestors 'none'/i.test(head), 'frame-ancestors on /');
  check(/x-content-type-options: nosniff/i.test(head), 'nosniff on /');

  // A fresh profile (--user-data-dir) in the temp folder.
  browser = await chromium.launchPersistentContext(path.join(dataDir, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  const context = browser;
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('dialog', (d) => { problems.push(`a ${d.type()} dialog opened: ${d.message()}`); d.dismiss(); });
  // The refused token (401) and the refused target (400) are provoked below;
  // any other failed load, script error or CSP report is a problem.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/the server responded with a status of 40[01]/.test(m.text())) problems.push('console error: ' + m.text());
  });

  let shot = 0;
  async function screenshot(name) {
    shot += 1;
    const base = `${String(shot).padStart(2, '0')}-${name}`;
    await page.screenshot({ path: path.join(screenshotDir, `${base}-1280.png`), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: path.join(screenshotDir, `${base}-390.png`), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
  }
  // Clicks the page's Refresh button until `probe` holds (the page also
  // refreshes itself every few seconds; this only saves the wait).
  async function refreshUntil(what, probe) {
    return waitFor(what, async () => {
      if (await probe()) return true;
      const refresh = page.locator('.page-head button', { hasText: 'Refresh' });
      if (await refresh.isEnabled()) await refresh.click();
      return false;
    }, { intervalMs: 250 });
  }

  // Sign in: a wrong token is refused and stored nowhere.
  await page.goto(daemon.url + '/');
  await page.locator('#token').waitFor();
  await screenshot('sign-in');
  await page.fill('#token', 'whk_wrong-token-0000000000000000');
  await page.click('form.signin button[type=submit]');
  await page.locator('.form-error', { hasText: 'refused' }).waitFor();
  check(await page.evaluate(() => sessionStorage.length) === 0, 'a refused token is not kept');
  await page.fill('#token', TOKEN);
  await page.click('form.signin button[type=submit]');
  await page.locator('h1', { hasText: 'Webhooks' }).waitFor();
  step('signed in');

  // A webhook, from the page.
  await page.locator('.empty', { hasText: 'No webhooks yet' }).waitFor();
  await page.click('button:has-text("New webhook")');
  await page.fill('input[name=name]', 'shop');
  await page.fill('input[name=description]', 'Orders from the shop front');
  await page.click('button:has-text("Create webhook")');
  await page.locator('h1', { hasText: 'shop' }).waitFor();
  const hash = new URL(page.url()).hash;
  const webhookId = /^#\/webhooks\/([0-9a-f-]{36})$/.exec(hash)?.[1];
  check(webhookId, 'the webhook page URL names the webhook: ' + hash);
  step(`webhook ${webhookId} created`);

  // The API's validation shows in the form: a bad URL is refused and
  // creates nothing.
  const receiverPort = await freePort();  // free now: the receiver is down
  await page.click('button:has-text("Add target")');
  await page.fill('.target-form input[name=name]', 'orders');
  await page.selectOption('.target-form select[name=type]', 'http');
  await page.fill('.target-form input[name=url]', 'ftp://127.0.0.1/hook');
  await page.fill('.target-form input[name=max_retries]', '0');
  await page.click('button:has-text("Create target")');
  await page.locator('.target-form .form-error', { hasText: 'url' }).waitFor();
  check(await page.locator('tr[data-target-id]').count() === 0, 'a refused target is not listed');
  await page.fill('.target-form input[name=url]', `http://127.0.0.1:${receiverPort}/hook`);
  await page.click('button:has-text("Create target")');
  const targetRow = page.locator('tr[data-target-id]', { hasText: 'orders' });
  await targetRow.waitFor();
  check(await targetRow.locator('.chip', { hasText: 'active' }).count() === 1, 'the target is active');
  step('target created');

  // An event from curl, to the URL the page shows; the receiver is down.
  const entrypoint = await page.locator('.copy-row input').first().inputValue();
  check(entrypoint.startsWith(daemon.url + '/hooks/'), 'entrypoint URL ' + entrypoint);
  const first = JSON.parse(await curl(['-H', 'Content-Type: application/json', '-d', '{"order": 42}', entrypoint]));
  check(first.event_id && first.deliveries === 1, 'the event was stored with one delivery');
  const eventRow = page.locator(`tr[data-event-id="${first.event_id}"]`);
  await refreshUntil('the delivery to fail', async () =>
    (await eventRow.locator('.chip.failed').count()) === 1);
  await refreshUntil('the target to show its failure', async () =>
    (await targetRow.innerText()).includes('Connection refused') ||
    (await targetRow.locator('td.bad-text').innerText().catch(() => '')) === '1');
  check((await page.locator('.stat.bad .value').innerText()) === '1', 'one failed delivery in the totals');
  check(await page.locator('.chart svg rect.bar-failed').count() === 1, 'the chart shows the failure');
  step('delivery failed against the down receiver');
  await screenshot('webhook-failed');

  // The event page: request, pretty body, the failed attempt.
  await eventRow.locator('a.event-link').click();
  await page.locator('h1', { hasText: 'Event' }).waitFor();
  const delivery = page.locator('section.delivery');
  await delivery.locator('.chip.failed').waitFor();
  check((await page.locator('pre.body').innerText()).includes('"order": 42'), 'the JSON body is pretty-printed');
  check(await delivery.locator('tbody tr').count() === 1, 'one attempt listed');
  check(await delivery.locator('button', { hasText: 'Retry' }).count() === 1, 'a failed delivery offers Retry');
  await screenshot('event-failed');

  // The receiver comes up; replay from the webhook page, dry-run count first.
  receiver = await startReceiver(receiverPort);
  step(`receiver up on ${receiverPort}`);
  await page.locator('.crumbs a', { hasText: 'shop' }).click();
  await targetRow.waitFor();
  await targetRow.locator('button', { hasText: 'Replay failed' }).click();
  const dialog = page.locator('dialog[open]');
  await dialog.waitFor();
  const message = await dialog.locator('.dialog-message').innerText();
  check(message.startsWith('1 failed delivery of target'), 'the dry run count is shown: ' + message);
  check(receiver.received.length === 0, 'a dry run delivers nothing');
  await screenshot('replay-dry-run');
  await dialog.locator('button', { hasText: 'Replay 1' }).click();
  await page.locator('.notice.ok', { hasText: 'Replayed 1 delivery' }).waitFor();
  await refreshUntil('the replayed delivery to be delivered', async () =>
    (await eventRow.locator('.chip.delivered').count()) === 1);
  check(receiver.received.length === 1 && receiver.received[0].body === '{"order": 42}',
    'the receiver got the stored body: ' + JSON.stringify(receiver.received));
  step('replayed and delivered');
  await screenshot('webhook-delivered');

  await eventRow.locator('a.event-link').click();
  await delivery.locator('.chip.delivered').waitFor();
  check(await delivery.locator('tbody tr').count() === 2, 'both attempts listed');
  await screenshot('event-delivered');

  // A stored script is text.
  const script = '<script>alert(1)</script>';
  const second = JSON.parse(await curl(['-H', 'Content-Type: text/html', '--data-binary', script, entrypoint]));
  await page.goto(`${daemon.url}/#/webhooks/${webhookId}/events/${second.event_id}`);
  await page.locator('.page-head .sub', { hasText: second.event_id }).waitFor();
  await page.locator('pre.body').waitFor();
  check(await page.locator('pre.body').innerText() === script, 'the body is shown as text');
  check(await page.locator('pre.body script').count() === 0, 'no script element came from the body');
  check(await page.evaluate(() => document.scripts.length) === 1, 'the page has only its own script');
  await page.locator('section.delivery .chip.delivered').waitFor();
  await screenshot('event-script-body');

  // The list with its counts.
  await page.locator('.crumbs a', { hasText: 'Webhooks' }).click();
  await page.locator('h1', { hasText: 'Webhooks' }).waitFor();
  const listRow = page.locator('tbody tr', { hasText: 'shop' });
  await listRow.waitFor();
  check((await listRow.locator('td.num').first().innerText()) === '2', 'two events counted');
  await screenshot('webhooks');

  // Entrypoints from the console: create one that verifies GitHub's
  // signature, change it to a custom scheme, see a bad value refused with
  // nothing changed, rotate its secret. Senders are node's fetch with the
  // signatures computed here; no secret is ever in the page.
  const secrets = ['gh-secret-Aq7x93kd', 'custom-secret-Zm4p81wq', 'rotated-secret-Kt2v55re'];
  const secretsShown = async () => {
    const text = await page.content() + await page.evaluate(() =>
      [...document.querySelectorAll('input, textarea')].map((i) => i.value).join('\n'));
    return secrets.filter((s) => text.includes(s));
  };
  const githubSigned = (secret, body) =>
    ({ 'X-Hub-Signature-256': 'sha256=' + crypto.createHmac('sha256', secret).update(body).digest('hex') });
  const customSigned = (secret, body, ts = Math.floor(Date.now() / 1000)) => ({
    'X-Ts': String(ts),
    'X-Sig': 'sha512=' + crypto.createHmac('sha512', secret).update(`${ts}.${body}`).digest('base64'),
  });
  await page.goto(`${daemon.url}/#/webhooks/${webhookId}`);
  await page.locator('h1', { hasText: 'shop' }).waitFor();

  // The form offers the schemes the API takes (its 400 lists them).
  const refusedScheme = await adminApi('POST', `/webhooks/${webhookId}/entrypoints`, { verification: { scheme: 'nope' } });
  const apiSchemes = /none, custom or a preset: (.*)$/.exec(refusedScheme.body.error.message)[1].split(', ');
  await page.click('button:has-text("Add entrypoint")');
  const addForm = page.locator('.entrypoint-form');
  const formSchemes = await addForm.locator('select[name=scheme] option').evaluateAll((o) => o.map((x) => x.value));
  check(JSON.stringify(formSchemes) === JSON.stringify(['none', 'custom', ...apiSchemes]),
    `the form's schemes are the API's: ${formSchemes} / ${apiSchemes}`);
  check(apiSchemes.length === 13, '13 presets: ' + apiSchemes);

  await addForm.locator('input[name=name]').fill('github');
  await addForm.locator('select[name=scheme]').selectOption('github');
  await addForm.locator('input[name=secret]').fill(secrets[0]);
  await screenshot('entrypoint-form');
  await addForm.locator('button', { hasText: 'Create entrypoint' }).click();
  const epRow = page.locator('.copy-row', { hasText: 'github' });
  await epRow.locator('.chip', { hasText: 'verifies github' }).waitFor();
  check(await addForm.isHidden(), 'the form closes once the entrypoint is created');
  const epUrl = await epRow.locator('input[aria-label="Entrypoint URL"]').inputValue();
  const epId = await epRow.getAttribute('data-entrypoint-id');
  check(epUrl === `${daemon.url}/hooks/${epId}`, 'the new entrypoint URL ' + epUrl);
  check((await secretsShown()).length === 0, 'no secret in the page after creating');

  const body1 = '{"action": "opened"}';
  let r = await ingest(epUrl, body1, githubSigned(secrets[0], body1));
  check(r.status === 200 && JSON.parse(r.text).event_id, 'a GitHub-signed request is stored: ' + r.status + ' ' + r.text);
  r = await ingest(epUrl, body1, {});
  check(r.status === 401 && JSON.parse(r.text).error.code === 'signature_invalid', 'an unsigned request is 401: ' + r.text);
  r = await ingest(epUrl, body1, githubSigned('another-secret', body1));
  check(r.status === 401, 'a request signed with another secret is 401');
  step('entrypoint created from the form verifies GitHub signatures');

  // To a custom scheme, with a custom response.
  await epRow.locator('button', { hasText: 'Edit' }).click();
  const dialog2 = page.locator('dialog[open]');
  await dialog2.locator('select[name=scheme]').selectOption('custom');
  await dialog2.locator('input[name=header]').fill('X-Sig');
  await dialog2.locator('input[name=prefix]').fill('sha512=');
  await dialog2.locator('select[name=algorithm]').selectOption('hmac-sha512');
  await dialog2.locator('select[name=encoding]').selectOption('base64');
  await dialog2.locator('input[name=timestamp_header]').fill('X-Ts');
  await dialog2.locator('input[name=content]').fill('{timestamp}.{body}');
  await dialog2.locator('input[name=tolerance_seconds]').fill('600');
  await dialog2.locator('input[name=secret]').fill(secrets[1]);
  await dialog2.locator('input[name=custom_response]').check();
  await dialog2.locator('input[name=response_status]').fill('202');
  await dialog2.locator('input[name=response_content_type]').fill('text/plain');
  await dialog2.locator('textarea[name=response_body]').fill('got it');
  await screenshot('entrypoint-edit');
  await dialog2.locator('button', { hasText: 'Save entrypoint' }).click();
  await epRow.locator('.chip', { hasText: 'verifies custom' }).waitFor();
  check(await epRow.locator('.chip', { hasText: 'answers 202 text/plain' }).count() === 1, 'the custom response is shown');
  check((await secretsShown()).length === 0, 'no secret in the page after saving');
  const body2 = '{"n": 2}';
  r = await ingest(epUrl, body2, customSigned(secrets[1], body2));
  check(r.status === 202 && r.text === 'got it', 'a custom-signed request gets the custom response: ' + r.status + ' ' + r.text);
  r = await ingest(epUrl, body2, githubSigned(secrets[0], body2));
  check(r.status === 401, 'the GitHub signature no longer verifies');
  r = await ingest(epUrl, body2, customSigned(secrets[1], body2, Math.floor(Date.now() / 1000) - 1000));
  check(r.status === 401 && JSON.parse(r.text).error.message.includes('600 seconds'), 'the tolerance set applies: ' + r.text);
  step('edited to a custom scheme from the form');

  // A bad value: the API's message by its field; nothing changes.
  const entrypointNow = async () =>
    (await adminApi('GET', `/webhooks/${webhookId}/entrypoints`)).body.entrypoints.find((e) => e.id === epId);
  const before = await entrypointNow();
  await epRow.locator('button', { hasText: 'Edit' }).click();
  check(await dialog2.locator('input[name=header]').inputValue() === 'X-Sig', 'the form shows the scheme as set');
  check(await dialog2.locator('input[name=secret]').inputValue() === '', 'the secret field starts empty');
  await dialog2.locator('input[name=tolerance_seconds]').fill('0');
  await dialog2.locator('input[name=secret]').fill(secrets[2]);
  await dialog2.locator('button', { hasText: 'Save entrypoint' }).click();
  const toleranceError = dialog2.locator('.field:has(input[name=tolerance_seconds]) .form-error');
  await toleranceError.filter({ hasText: 'tolerance_seconds' }).waitFor();
  step('refused: ' + await toleranceError.innerText());
  await screenshot('entrypoint-refused');
  await dialog2.locator('button', { hasText: 'Cancel' }).click();
  await dialog2.waitFor({ state: 'detached' });
  const after = await entrypointNow();
  check(JSON.stringify(after) === JSON.stringify(before), 'a refused edit changes nothing: ' + JSON.stringify(after));
  r = await ingest(epUrl, body2, customSigned(secrets[2], body2));
  check(r.status === 401, 'the refused secret does not verify');
  r = await ingest(epUrl, body2, customSigned(secrets[1], body2));
  check(r.status === 202, 'the secret set before still verifies');

  // Rotation: the new secret and the old one both verify.
  await epRow.locator('button', { hasText: 'Edit' }).click();
  await dialog2.locator('input[name=secret]').fill(secrets[2]);
  await dialog2.locator('button', { hasText: 'Add a secret' }).click();
  await dialog2.locator('input[name=secret]').nth(1).fill(secrets[1]);
  await dialog2.locator('button', { hasText: 'Save entrypoint' }).click();
  await epRow.locator('.chip', { hasText: 'verifies custom (2 secrets)' }).waitFor();
  for (const s of [secrets[2], secrets[1]]) {
    r = await ingest(epUrl, body2, customSigned(s, body2));
    check(r.status === 202, 'both secrets verify while one is rotated');
  }
  check((await secretsShown()).length === 0, 'no secret in the page: ' + await secretsShown());
  step('secrets rotated from the form');

  // A Meta entrypoint with its handshake; a rename keeps the write-only
  // secret and verify token that were not typed again.
  const metaSecret = 'meta-app-secret-Hx6w20pz';
  const verifyToken = 'hub-verify-token-Qe3n77ts';
  secrets.push(metaSecret, verifyToken);
  await page.click('button:has-text("Add entrypoint")');
  await addForm.locator('input[name=name]').fill('meta');
  await addForm.locator('select[name=scheme]').selectOption('meta');
  await addForm.locator('input[name=secret]').fill(metaSecret);
  await addForm.locator('select[name=handshake]').selectOption('meta');
  await addForm.locator('input[name=verify_token]').fill(verifyToken);
  await addForm.locator('button', { hasText: 'Create entrypoint' }).click();
  const metaRow = page.locator('.copy-row', { hasText: 'answers meta handshake' });
  await metaRow.waitFor();
  const metaUrl = await metaRow.locator('input[aria-label="Entrypoint URL"]').inputValue();
  const handshakeAnswer = async (token) => {
    const res = await fetch(`${metaUrl}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=ch-42`);
    return `${res.status} ${await res.text()}`;
  };
  const metaAnswers = async () => {
    check(await handshakeAnswer(verifyToken) === '200 ch-42', 'the Meta handshake is answered');
    check((await handshakeAnswer('wrong')).startsWith('403 '), 'another verify token is 403');
    const b = '{"object": "page"}';
    check((await ingest(metaUrl, b, githubSigned(metaSecret, b))).status === 200, 'a Meta-signed request is stored');
  };
  await metaAnswers();
  await metaRow.locator('button', { hasText: 'Edit' }).click();
  await dialog2.locator('input[name=name]').fill('meta-app');
  await dialog2.locator('button', { hasText: 'Save entrypoint' }).click();
  await page.locator('.copy-row .ep-name', { hasText: 'meta-app' }).waitFor();
  await metaAnswers();
  check((await secretsShown()).length === 0, 'no secret or verify token in the page: ' + await secretsShown());
  step('Meta entrypoint with its handshake from the form; a rename keeps its secrets');
  const listed = JSON.stringify((await adminApi('GET', `/webhooks/${webhookId}/entrypoints`)).body);
  check(secrets.every((s) => !listed.includes(s)), 'no secret in the API answer');

  // More webhooks than a page: the list asks the API for pages of 50 (never
  // the whole list), shows 50 and asks for the stats of those 50 only; the
  // next page, for its own rows only. The page's cursor is in the URL: a
  // reload, and a link opened afresh, show the same page.
  for (let i = 0; i < 60; i += 1) {
    const made = await adminApi('POST', '/webhooks', { name: `tenant-${String(i).padStart(2, '0')}` });
    check(made.status === 201, 'webhook created: ' + made.status);
  }
  let statsAsked = [];
  const listAsked = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    const m = /^\/api\/v1\/webhooks\/([0-9a-f-]{36})\/stats$/.exec(url.pathname);
    if (m) statsAsked.push(m[1]);
    if (url.pathname === '/api/v1/webhooks' && r.method() === 'GET') listAsked.push(url.search);
  });
  const pagerCount = page.locator('.pager-count');
  const rowIds = () => page.$$eval('tbody tr a[href^="#/webhooks/"]',
    (links) => links.map((a) => decodeURIComponent(a.getAttribute('href').slice('#/webhooks/'.length))));
  const pageAsked = async (label, rows) => {
    const ids = await rowIds();
    check(ids.length === rows, `${label}: ${rows} rows shown, not ${ids.length}`);
    const asked = new Set(statsAsked);
    check(asked.size === rows && [...asked].every((id) => ids.includes(id)),
      `${label}: stats asked for the ${rows} rows shown only, not ${asked.size} webhooks (${statsAsked.length} requests)`);
    await page.locator('tbody tr td.num[data-label=events]', { hasText: '—' }).count()
      .then((n) => check(n === 0, `${label}: every row shows its stats`));
    return ids;
  };
  const listCursor = () => new URLSearchParams(new URL(page.url()).hash.split('?')[1] || '').get('cursor');
  statsAsked = [];
  await page.evaluate(() => { location.hash = '#/'; });
  await pagerCount.filter({ hasText: /^1\u201350$/ }).waitFor();
  const firstIds = await pageAsked('first page', 50);
  check(await page.locator('.pager button', { hasText: 'Previous' }).isDisabled(), 'no page before the first');
  check(listCursor() === null, 'the first page has no cursor in the URL');
  await screenshot('webhook-list-paged');
  statsAsked = [];
  await page.click('.pager button:has-text("Next")');
  await pagerCount.filter({ hasText: /^51\u201361$/ }).waitFor();
  const secondIds = await pageAsked('second page', 11);
  check(secondIds.every((id) => !firstIds.includes(id)), 'the second page shows other webhooks');
  check(await page.locator('.pager button', { hasText: 'Next' }).isDisabled(), 'no page after the last');
  const cursor = listCursor();
  check(typeof cursor === 'string' && cursor.length > 0, 'the page\u2019s cursor is in the URL: ' + page.url());
  statsAsked = [];
  await page.click('.page-head button:has-text("Refresh")');
  await waitFor('a refresh of the second page', () => new Set(statsAsked).size === 11);
  await pageAsked('second page refreshed', 11);
  // A reload keeps the page, its count and Previous.
  statsAsked = [];
  await page.reload();
  await pagerCount.filter({ hasText: /^51\u201361$/ }).waitFor();
  check(JSON.stringify(await pageAsked('second page reloaded', 11)) === JSON.stringify(secondIds),
    'a reload shows the same page');
  check(listCursor() === cursor, 'a reload keeps the cursor in the URL');
  // A shared link: the same page, with no history of the pages before it.
  statsAsked = [];
  await page.evaluate(() => { history.replaceState(null, '', location.href); });
  await page.reload();
  await page.locator('.pager button', { hasText: 'First page' }).waitFor();
  check(JSON.stringify(await pageAsked('second page from a link', 11)) === JSON.stringify(secondIds),
    'a link shows the same page');
  check(await pagerCount.count() === 0, 'no count from a link: where the page starts is not known');
  await page.click('.pager button:has-text("First page")');
  await pagerCount.filter({ hasText: /^1\u201350$/ }).waitFor();
  check(listCursor() === null, 'the first page again, without a cursor');
  await page.click('.pager button:has-text("Next")');
  await pagerCount.filter({ hasText: /^51\u201361$/ }).waitFor();
  await page.click('.pager button:has-text("Previous")');
  await pagerCount.filter({ hasText: /^1\u201350$/ }).waitFor();
  check(JSON.stringify(await rowIds()) === JSON.stringify(firstIds), 'Previous shows the first page');
  await page.goBack();
  await pagerCount.filter({ hasText: /^51\u201361$/ }).waitFor();
  check(listCursor() === cursor, 'Back goes to the page before');
  // A cursor the list did not give out: said so, with the way back.
  await page.evaluate(() => { location.hash = '#/?cursor=not-one'; });
  await page.locator('.card-body .empty', { hasText: 'cursor is not one this listing gave out' }).waitFor();
  await page.click('.card-body .empty a:has-text("first page")');
  await pagerCount.filter({ hasText: /^1\u201350$/ }).waitFor();
  check(listAsked.length > 0 && listAsked.every((q) => /(^|[?&])limit=(1|50)(&|$)/.test(q)),
    'every list request asks for a page: ' + listAsked.join(' '));
  step('the webhook list pages by the API\u2019s cursor, kept in the URL: stats asked for the rows shown only');

  // The token was kept in this tab's sessionStorage only.
  const html = await page.content();
  check(!html.includes(TOKEN), 'the token is not in the page');
  check(!page.url().includes(TOKEN), 'the token is not in the URL');
  check(await page.evaluate(() => localStorage.length) === 0, 'nothing in localStorage');
  check((await context.cookies()).length === 0, 'no cookie');
  await page.click('#sign-out');
  await page.locator('#token').waitFor();
  check(await page.evaluate(() => sessionStorage.length) === 0, 'signing out forgets the token');

  check(problems.length === 0, 'no page error, CSP violation or dialog:\n' + problems.join('\n'));
  step(`passed; screenshots in ${screenshotDir}`);
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
  await stopDaemon(daemon);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
