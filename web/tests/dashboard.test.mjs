// The dashboard's acceptance test (docs/dashboard.md): Debian's chromium,
// driven by playwright-core, against a live pandastackd on real guests.
// The steps run in order and share one browser tab:
//   sign in with the admin key; create the key ci-key, see it listed, revoke
//   it, and see a call with it answer 401; make a key for another team;
//   create a code-interpreter sandbox
//   from the page; a matplotlib chart renders as an <img> wider than 100 px;
//   a DataFrame renders as a table with its values (in the sandboxed frame);
//   1/0 shows the ZeroDivisionError traceback; HTML and Markdown carrying
//   script run nothing in the dashboard's origin (with positive controls); a
//   script of the daemon's origin runs only with the page's nonce (what a
//   sandbox serves on the path form shares that origin);
//   a file uploaded in the file browser reads back with cat in the shell;
//   killing the sandbox from its page changes its status without a reload;
//   the metrics page draws its charts; sign out forgets the key.
// Each page is screenshotted into PANDASTACK_SCREENSHOTS (default
// build/web-screenshots); no page may log a console error.
//
// Needs: build/pandastackd, the built dashboard (make web), a baked
// code-interpreter template, /usr/bin/chromium (CHROMIUM to override).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startDaemon } from './daemon.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SHOTS = process.env.PANDASTACK_SCREENSHOTS ?? path.join(repo, 'build', 'web-screenshots');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const STEP_MS = 240_000; // one step under TCG on a busy 2-core host
const CELL_MS = 180_000;

let daemon;
let context;
let page;
let profile;
let sandboxId;
let storageAfterSignIn;
const consoleErrors = []; // from the dashboard's own documents: must stay empty
let allowed = null; // a step's expected console error (a RegExp), moved to `expected`
const expected = [];
const frameRefusals = []; // the output frame refusing untrusted content (expected)
const shots = [];

async function shot(name) {
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
  console.log(`screenshot: ${file}`);
}

/** Run code in the console; resolves the finished cell's locator. */
async function runCell(code) {
  const n = await page.locator('.cells > li').count();
  await page.fill('#code', code);
  await page.keyboard.press('Shift+Enter');
  await page.waitForFunction((i) => {
    const c = document.querySelectorAll('.cells > li')[i];
    return c && !c.classList.contains('running');
  }, n, { timeout: CELL_MS });
  return page.locator('.cells > li').nth(n);
}

/** Run fn with the page at a phone's width, then back to a laptop's. */
async function atPhoneWidth(fn) {
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    await fn();
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
}

function storage() {
  return page.evaluate(() => JSON.stringify(Object.entries(sessionStorage).sort()));
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // the folder shows one run: the previous run's pictures go
  for (const f of readdirSync(SHOTS)) if (f.endsWith('.png')) rmSync(path.join(SHOTS, f));
  daemon = await startDaemon();
  const t = await daemon.api('GET', '/v1/templates');
  const ci = t.body.templates?.find((x) => x.name === 'code-interpreter');
  assert.equal(ci?.status, 'ready', `the code-interpreter template is not baked (make images templates): ${JSON.stringify(t.body)}`);
  profile = mkdtempSync(path.join(tmpdir(), 'pandastack-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const where = m.location()?.url ?? '';
    const entry = `${m.text()} (at ${where || page.url()})`;
    if (/\/ui\/frame\.[^/]*$/.test(where) && /Content Security Policy/.test(m.text())) frameRefusals.push(entry);
    else if (allowed && allowed.test(entry)) expected.push(entry);
    else consoleErrors.push(entry);
  });
  page.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));
});

after(async () => {
  if (shots.length) console.log(`screenshots (${shots.length}):\n  ${shots.join('\n  ')}`);
  if (frameRefusals.length) console.log(`the output frame refused (expected):\n  ${frameRefusals.join('\n  ')}`);
  await context?.close().catch(() => {});
  if (profile) rmSync(profile, { recursive: true, force: true });
  await daemon?.stop();
});

test('the app never parses text as HTML in its own document', async () => {
  const dir = process.env.PANDASTACK_WEB_DIR ?? path.join(repo, 'build', 'web');
  const bundle = (name) => {
    const f = readdirSync(dir).filter((x) => new RegExp(`^${name}\\.[A-Z0-9]{8}\\.js$`).test(x));
    assert.equal(f.length, 1, `one ${name} bundle in ${dir}`);
    return [f[0], readFileSync(path.join(dir, f[0]), 'utf8')];
  };
  const app = bundle('app');
  const code = app[1];
  // positive control: the frame's bundle, which does parse HTML (in its own
  // opaque-origin document), is caught by the same probe
  assert.match(bundle('frame')[1], /\bDOMParser\b/);
  for (const sink of [/\.(inner|outer)HTML\b/, /\.insertAdjacentHTML\b/, /\.srcdoc\b/, /\bdocument\.write/, /\bDOMParser\b/, /\beval\(/, /\bnew Function\(/])
    assert.doesNotMatch(code, sink, `${app[0]}`);
});

test('sign in with the admin key', { timeout: STEP_MS }, async () => {
  await page.goto(daemon.url + '/');
  await page.waitForSelector('#api-key');
  await shot('01-sign-in');
  // a wrong key is refused with the API's message and stored nowhere (the
  // browser logs the 401 of that check: expected here, and only here)
  allowed = /status of 401 .*\/healthz\)$/;
  await page.fill('#api-key', 'pds_' + '0'.repeat(48));
  await page.keyboard.press('Enter');
  await page.waitForSelector('.signin .status.error');
  assert.match(await page.textContent('.signin .status'), /This key is not valid: a valid API key is required/);
  assert.equal(await storage(), '[]');
  for (let i = 0; i < 50 && !expected.length; i++) await page.waitForTimeout(100);
  allowed = null;
  assert.equal(expected.length, 1, 'the probe saw the expected 401 in the console');
  await page.fill('#api-key', daemon.adminKey);
  await page.keyboard.press('Enter');
  await page.waitForSelector('h1:text("Sandboxes")');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('pandastack.apiKey')), daemon.adminKey);
  assert.ok(!page.url().includes(daemon.adminKey), 'the key is not in the URL');
  assert.deepEqual(await context.cookies(), [], 'no cookie is set');
  storageAfterSignIn = await storage();
  await shot('02-sandboxes');
});

test('keys: create ci-key, see it listed, revoke it, then it answers 401; a key for another team', { timeout: STEP_MS }, async () => {
  await page.click('nav a:text("Keys")');
  await page.fill('#key-name', 'ci-key');
  await page.click('button:text("Create key")');
  const secret = await page.inputValue('#new-key-secret', { timeout: 30_000 });
  assert.match(secret, /^pds_[0-9a-f]{48}$/);
  const row = page.locator('tr[data-key-name="ci-key"]');
  await row.waitFor();
  assert.match(await row.textContent(), /ci-key.*admin.*never/s);
  // positive control: the key works before it is revoked
  assert.equal((await daemon.api('GET', '/v1/sandboxes', { key: secret })).status, 200);
  await shot('03-keys-created');
  await row.locator('button:text("Revoke")').click();
  await page.click('dialog button:text("Revoke key")');
  await row.waitFor({ state: 'detached', timeout: 30_000 });
  const r = await daemon.api('GET', '/v1/sandboxes', { key: secret });
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, 'unauthorized');
  // an admin names another team
  await page.fill('#key-name', 'other-team-key');
  await page.fill('#key-team', 'ci-team');
  await page.click('button:text("Create key")');
  const other = page.locator('tr[data-key-name="other-team-key"]');
  await other.waitFor({ timeout: 30_000 });
  assert.match(await other.textContent(), /ci-team/);
  await shot('04-keys-after-revoke');
});

test('create a code-interpreter sandbox from the page', { timeout: STEP_MS }, async () => {
  await page.click('nav a:text("Sandboxes")');
  await page.waitForSelector('#template option[value="code-interpreter"]:not([disabled])', { state: 'attached' });
  await page.selectOption('#template', 'code-interpreter');
  await page.fill('#metadata', 'purpose=dashboard-test');
  await page.click('button:text("Create sandbox")');
  await page.waitForURL(/#\/sandboxes\/sbx_[0-9a-f]{20}$/, { timeout: STEP_MS });
  sandboxId = page.url().split('/').pop();
  await page.waitForSelector('#sandbox-status[data-status="running"]');
  const s = await daemon.api('GET', `/v1/sandboxes/${sandboxId}`);
  assert.equal(s.status, 200);
  assert.equal(s.body.template, 'code-interpreter');
  assert.deepEqual(s.body.metadata, { purpose: 'dashboard-test' });
});

test('a matplotlib chart renders as an image', { timeout: STEP_MS }, async () => {
  const cell = await runCell('import matplotlib.pyplot as plt; plt.plot([1,2,3]); plt.show()');
  const img = cell.locator('img.image-output');
  await img.waitFor();
  await page.waitForFunction((el) => el.complete, await img.elementHandle());
  const width = await img.evaluate((el) => el.naturalWidth);
  assert.ok(width > 100, `naturalWidth ${width}`);
  assert.match(await img.getAttribute('src'), /^data:image\/png;base64,/);
});

test('a DataFrame renders as a table with its values', { timeout: STEP_MS }, async () => {
  const cell = await runCell('import pandas as pd\npd.DataFrame({"animal": ["panda", "koala"], "count": [41, 7]})');
  const frameEl = await cell.locator('iframe.html-output').elementHandle();
  assert.equal(await frameEl.getAttribute('sandbox'), 'allow-scripts');
  const frame = await frameEl.contentFrame();
  await frame.waitForSelector('table');
  const cells = await frame.$$eval('table td', (tds) => tds.map((td) => td.textContent.trim()));
  for (const v of ['panda', 'koala', '41', '7']) assert.ok(cells.includes(v), `${v} in ${cells}`);
  // the frame is an opaque origin: no way to the dashboard's storage
  assert.equal(await frame.evaluate(() => self.origin), 'null');
  assert.equal(await frame.evaluate(() => { try { return String(sessionStorage.length); } catch (e) { return e.name; } }), 'SecurityError');
  await shot('05-console');
});

test('1/0 shows the ZeroDivisionError traceback', { timeout: STEP_MS }, async () => {
  const cell = await runCell('1/0');
  const err = cell.locator('.cell-error');
  await err.waitFor();
  assert.match(await err.locator('strong').textContent(), /^ZeroDivisionError: division by zero/);
  assert.match(await err.locator('pre.traceback').textContent(), /ZeroDivisionError/);
  assert.ok(await cell.evaluate((c) => c.classList.contains('failed')));
});

test('HTML and Markdown from the sandbox run nothing in the dashboard', { timeout: STEP_MS }, async () => {
  const payload = '<img src=x onerror="window.parent.pwned=1">';
  // positive control 1: the payload runs where nothing stops it, and the
  // probe sees the flag it sets
  const bare = await context.newPage();
  await bare.setContent(`<iframe srcdoc='${payload.replaceAll('"', '&quot;')}'></iframe>`);
  await bare.waitForFunction(() => window.pwned === 1, null, { timeout: 10_000 });
  await bare.close();
  // positive control 2: in the dashboard's page the probe reads a set flag
  assert.equal(await page.evaluate(() => { window.pwned = 'control'; const v = window.pwned; delete window.pwned; return v; }), 'control');
  assert.equal(await page.evaluate(() => typeof window.pwned), 'undefined');

  const refusedBefore = frameRefusals.length;
  const cell = await runCell([
    'from IPython.display import HTML, Markdown, display',
    'display(Markdown(\'<script>window.parent.pwned=2; sessionStorage.setItem("pwned", "2")</script> **md**\'))',
    `HTML('${payload}')`,
  ].join('\n'));
  // the HTML reached a live document: the frame holds the img with its handler
  const frame = await (await cell.locator('iframe.html-output').elementHandle()).contentFrame();
  await frame.waitForSelector('img[src="x"][onerror]', { state: 'attached' });
  // the Markdown is shown as text, its <script> as characters
  assert.match(await cell.locator('pre.markdown').textContent(), /<script>window\.parent\.pwned=2/);
  await page.waitForTimeout(2000); // give any handler time to fire
  assert.equal(await page.evaluate(() => typeof window.pwned), 'undefined');
  assert.equal(await storage(), storageAfterSignIn, 'sessionStorage untouched');
  assert.equal(await page.locator('script').count(), 1, 'no script element was added to the dashboard');
  // and the frame's own policy is what stopped the handler
  assert.ok(frameRefusals.slice(refusedBefore).some((m) => /inline event handler/.test(m)), frameRefusals.join('\n'));
});

test('a script of the daemon\'s origin runs only with the page\'s nonce', { timeout: STEP_MS }, async () => {
  // A sandbox's exposed port is served on the daemon's origin (the path form,
  // /v1/sandboxes/{id}/ports/{port}/...): 'self' would let its scripts run as
  // the dashboard's.  The probe: a script element for a file of this origin
  // (the frame's bundle, harmless in this page), once without the nonce the
  // page's own script carries and once with it.
  const dir = process.env.PANDASTACK_WEB_DIR ?? path.join(repo, 'build', 'web');
  const frameJs = readdirSync(dir).find((x) => /^frame\.[A-Z0-9]{8}\.js$/.test(x));
  assert.ok(frameJs, `the frame's bundle in ${dir}`);
  const probe = (withNonce) => page.evaluate(([src, withNonce]) => new Promise((resolve) => {
    const url = new URL(src, location.href).href;
    const s = document.createElement('script');
    s.dataset.probe = '1';
    const onViolation = (e) => { if (e.blockedURI === url) resolve(`refused by ${e.effectiveDirective}`); };
    document.addEventListener('securitypolicyviolation', onViolation);
    if (withNonce) s.nonce = document.querySelector('script').nonce;
    s.onload = () => resolve('ran');
    s.onerror = () => setTimeout(() => resolve('error'), 500); // the violation event comes first
    s.src = src;
    document.head.append(s);
    setTimeout(() => resolve('nothing'), 10_000);
  }).finally(() => document.querySelectorAll('script[data-probe]').forEach((e) => e.remove())),
  [`/ui/${frameJs}?probe=${withNonce ? 1 : 0}`, withNonce]);
  // the page's own script carries a nonce the browser keeps
  assert.ok(await page.evaluate(() => document.querySelector('script').nonce.length >= 16));
  // positive control: with the nonce the script runs, so the probe sees a run
  assert.equal(await probe(true), 'ran');
  // Chromium says so on the console ("Refused to load the script" or, in
  // newer versions, "Loading the script ... violates"): expected here
  const refusal = /(Refused to load|Loading) the script '[^']*probe=0/;
  allowed = refusal;
  try {
    assert.match(await probe(false), /^refused by script-src(-elem)?$/);
    const until = Date.now() + 5000;
    while (!expected.some((m) => refusal.test(m)) && Date.now() < until)
      await page.waitForTimeout(100);
  } finally {
    allowed = null;
  }
  assert.ok(expected.some((m) => refusal.test(m)), expected.join('\n'));
});

test('a file uploaded in the file browser reads back with cat', { timeout: STEP_MS }, async () => {
  const text = `uploaded from the dashboard test ${Date.now()}\n`;
  await page.click('#tab-files');
  await page.waitForSelector('#files-path');
  await page.setInputFiles('#upload-input', { name: 'from-dashboard.txt', mimeType: 'text/plain', buffer: Buffer.from(text) });
  await page.waitForSelector('tr[data-path="/workspace/from-dashboard.txt"]', { timeout: 60_000 });
  assert.match(await page.textContent('section.files .status'), /Uploaded \/workspace\/from-dashboard\.txt/);
  await shot('06-files');
  await page.click('#tab-shell');
  await page.fill('#shell-cmd', 'cat /workspace/from-dashboard.txt');
  await page.keyboard.press('Enter');
  const run = page.locator('.shell-run').last();
  await run.locator('.exit').waitFor({ timeout: 60_000 });
  assert.equal(await run.locator('pre.terminal').textContent(), text);
  assert.match(await run.locator('.exit').textContent(), /^exit 0 /);
  await shot('07-shell');
});

test('the sandbox page at phone width', { timeout: STEP_MS }, () => atPhoneWidth(async () => {
  await page.click('#tab-console');
  await page.waitForSelector('.cells > li');
  // a frame out of view is not painted: bring the DataFrame's into view
  await page.locator('iframe.html-output').first().scrollIntoViewIfNeeded();
  await page.waitForTimeout(500);
  await shot('08-sandbox-phone');
}));

test('killing the sandbox from its page changes its status without a reload', { timeout: STEP_MS }, async () => {
  await page.evaluate(() => (window.notReloaded = 'marker'));
  await page.click('.title-row button:text("Kill")');
  await page.click('dialog button:text("Kill sandbox")');
  await page.waitForSelector('#sandbox-status[data-status="deleted"]', { timeout: 60_000 });
  assert.equal(await page.evaluate(() => window.notReloaded), 'marker', 'the page was not reloaded');
  assert.equal((await daemon.api('GET', `/v1/sandboxes/${sandboxId}`)).status, 404);
  await shot('09-sandbox-killed');
  await page.click('.crumbs a');
  await page.waitForSelector(`tr[data-sandbox-id="${sandboxId}"][data-status="deleted"]`);
  await shot('10-sandboxes-list');
});

test('the metrics page draws its charts', { timeout: STEP_MS }, async () => {
  await page.click('nav a:text("Metrics")');
  await page.waitForFunction(() => document.querySelectorAll('svg.chart').length === 3);
  const figures = await page.$$eval('.metric .figure', (els) => els.map((e) => e.textContent));
  assert.match(figures[2], /^p50 \d/, 'one create is in the latency histogram');
  const labels = await page.$$eval('svg.chart', (els) => els.map((e) => e.getAttribute('aria-label')));
  assert.match(labels[0], /running/);
  assert.match(labels[2], /histogram of [1-9]\d* creates/);
  await page.waitForTimeout(6000); // a second read gives a creates-per-minute figure
  await shot('11-metrics');
});

test('keys and sandboxes at phone width', { timeout: STEP_MS }, () => atPhoneWidth(async () => {
  await page.click('nav a:text("Keys")');
  await page.waitForSelector('tr[data-key-name="admin"]');
  await shot('12-keys-phone');
  await page.click('nav a:text("Sandboxes")');
  await page.waitForSelector('tr[data-sandbox-id]');
  await shot('13-sandboxes-phone');
}));

test('sign out forgets the key', { timeout: STEP_MS }, async () => {
  await page.click('#sign-out');
  await page.waitForSelector('#api-key');
  assert.equal(await storage(), '[]');
  await page.reload();
  await page.waitForSelector('#api-key');
});

test('no page logged a console error', () => {
  assert.deepEqual(consoleErrors, []);
});
