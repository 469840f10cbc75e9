/**
 * The admin router's status page in a real headless Chromium (puppeteer-core driving the system's
 * chromium): it lists the limiter, shows its most limited key (as the keyed hash topLimited gives), looks a
 * key up, and a screenshot of it is written to test-results/. The page loads nothing but its own script. It
 * works with and without its trailing slash; a page on another site cannot change anything through the
 * browser's credentials for the router, while the router's own origin can; a Basic challenge signs a browser in.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, fixedWindow } from '@sluice/core';
import { type AdminAction, adminRouter, nodeAdminHandler } from '@sluice/core/admin';
import express from 'express';
import puppeteer from 'puppeteer-core';
import { expect, it } from 'vitest';

/** The system's Chromium: CHROMIUM_PATH, or chromium / chromium-browser on the PATH (.ci/run installs it). */
function chromium(): string {
  const given = process.env.CHROMIUM_PATH;
  if (given !== undefined) return given;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim();
    } catch {}
  }
  throw new Error('no Chromium found: install it (apt-get install chromium) or set CHROMIUM_PATH');
}

const launch = () =>
  puppeteer.launch({
    executablePath: chromium(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });

async function listen(server: ReturnType<typeof createServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

it('the status page shows the top limited key, looks a key up, and is screenshotted', async () => {
  const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 }), prefix: 'shop' });
  for (let i = 0; i < 9; i++) await limiter.tryAcquire('tenant-hot');
  for (let i = 0; i < 4; i++) await limiter.tryAcquire('tenant-warm');
  const router = adminRouter({
    limiters: [limiter],
    authorize: (request) => request.headers.get('authorization') === 'Bearer page-test',
    basePath: '/admin',
  });
  const handler = nodeAdminHandler(router);
  const requested: string[] = [];
  const server = createServer((req, res) => {
    requested.push(req.url ?? '');
    void handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/`;
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.setExtraHTTPHeaders({ authorization: 'Bearer page-test' });
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    page.on('pageerror', (error) => failed.push(String(error)));
    await page.setViewport({ width: 900, height: 600 });
    await page.goto(url);
    await page.waitForSelector('#top tbody tr');
    const rows = await page.$$eval('#top tbody tr', (trs) =>
      trs.map((tr) => [...tr.children].map((td) => td.textContent)),
    );
    expect(rows[0]).toEqual([await limiter.keyHash('tenant-hot'), '7', '1', '0']);
    expect(rows[1]).toEqual([await limiter.keyHash('tenant-warm'), '2', '1', '0']);
    expect(await page.$eval('#limiter', (select) => (select as unknown as { value: string }).value)).toBe('shop');
    // A key with markup in it is shown as text.
    await page.type('#key', 'tenant-hot<b>x</b>');
    await page.click('#lookup button');
    await page.waitForFunction("!document.getElementById('found').hidden");
    const found = await page.$eval('#found', (pre) => ({ text: pre.textContent, bold: pre.querySelector('b') }));
    expect(JSON.parse(found.text as string)).toMatchObject({ allowed: true, limit: 2, remaining: 2 });
    expect(found.bold).toBeNull();
    mkdirSync('test-results', { recursive: true });
    const file = 'test-results/status-page.png';
    await page.screenshot({ path: file });
    expect(existsSync(file) && statSync(file).size > 5_000).toBe(true);
    expect(failed).toEqual([]);
    // Only the page, its script and its API: nothing from elsewhere.
    expect(requested.every((path) => path.startsWith('/admin/'))).toBe(true);
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
    await limiter.close();
  }
}, 60_000);

it("a page on another site cannot change limits with the admin's credentials; the router's own origin can", async () => {
  const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 2, windowMs: 60_000 }), prefix: 'shop' });
  await limiter.block('k', 60_000);
  const actions: AdminAction[] = [];
  let heard: () => void = () => {};
  const twoHeard = new Promise<void>((resolve) => {
    heard = () => actions.length === 2 && resolve();
  });
  const handler = nodeAdminHandler(
    adminRouter({
      limiters: [limiter],
      authorize: (request) => request.headers.get('authorization') === 'Bearer page-test',
      basePath: '/admin',
      onAction: (action) => {
        actions.push(action);
        heard();
      },
    }),
  );
  const admin = createServer((req, res) => void handler(req, res));
  const adminUrl = `http://127.0.0.1:${await listen(admin)}/admin`;
  // Another site: localhost is not 127.0.0.1's site. Its page posts text/plain (no preflight) with the
  // browser's credentials, by fetch and by a form.
  const attacker = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(`<!doctype html><iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="${adminUrl}/api/limiters/shop/keys/k/unblock">
<input name='{"a":"' value='"}'></form>
<script>
fetch('${adminUrl}/api/limiters/shop/lists', { method: 'POST', mode: 'no-cors', credentials: 'include',
  headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ list: 'allow', entries: ['tenant-x'] }) });
document.getElementById('f').submit();
</script>`);
  });
  const attackerUrl = `http://localhost:${await listen(attacker)}/`;
  const browser = await launch();
  try {
    const page = await browser.newPage();
    // The admin's login, which the browser sends with every request to the router (as a cookie or a cached
    // Basic login would be).
    await page.setExtraHTTPHeaders({ authorization: 'Bearer page-test' });
    await page.goto(attackerUrl);
    await twoHeard;
    expect(actions.map((a) => [a.action, a.outcome, a.status])).toEqual([
      ['list', 'refused', 403],
      ['unblock', 'refused', 403],
    ]);
    expect(await limiter.accessList()).toEqual([]);
    expect((await limiter.tryAcquire('k')).blocked).toBe(true);
    // The router's own page: same-origin, JSON: taken.
    await page.goto(`${adminUrl}/`);
    const status = await page.evaluate(async () => {
      const response = await fetch('api/limiters/shop/keys/k/unblock', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      return response.status;
    });
    expect(status).toBe(200);
    expect((await limiter.tryAcquire('k')).allowed).toBe(true);
  } finally {
    await browser.close();
    await new Promise((resolve) => admin.close(resolve));
    await new Promise((resolve) => attacker.close(resolve));
    await limiter.close();
  }
}, 60_000);

it('the page works at its mount path without the trailing slash (Express strips the mount path)', async () => {
  const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 1, windowMs: 60_000 }), prefix: 'shop' });
  for (let i = 0; i < 3; i++) await limiter.tryAcquire('tenant-hot');
  const handler = nodeAdminHandler(
    adminRouter({
      limiters: [limiter],
      authorize: (request) => request.headers.get('authorization') === 'Bearer page-test',
    }),
  );
  const app = express();
  app.use('/admin/limits', (req, res) => void handler(req, res));
  const server = createServer(app);
  const base = `http://127.0.0.1:${await listen(server)}/admin/limits`;
  const browser = await launch();
  try {
    for (const url of [base, `${base}/`, `${base}/index.html`]) {
      const page = await browser.newPage();
      await page.setExtraHTTPHeaders({ authorization: 'Bearer page-test' });
      const failed: string[] = [];
      page.on('pageerror', (error) => failed.push(String(error)));
      page.on('response', (response) => {
        if (!response.ok()) failed.push(`${response.status()} ${response.url()}`);
      });
      await page.goto(url);
      await page.waitForSelector('#top tbody tr', { timeout: 15_000 });
      expect([url, await page.$eval('#limiter', (select) => (select as unknown as { value: string }).value)]).toEqual([
        url,
        'shop',
      ]);
      expect(failed).toEqual([]);
      await page.close();
    }
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
    await limiter.close();
  }
}, 60_000);

it('a browser asked for a Basic login (challenge) signs in and sees the page', async () => {
  const limiter = createLimiter({ rules: fixedWindow({ name: 'api', limit: 1, windowMs: 60_000 }), prefix: 'shop' });
  for (let i = 0; i < 3; i++) await limiter.tryAcquire('tenant-hot');
  const login = `Basic ${Buffer.from('oncall:a-long-random-password').toString('base64')}`;
  const handler = nodeAdminHandler(
    adminRouter({
      limiters: [limiter],
      authorize: (request) => request.headers.get('authorization') === login,
      basePath: '/admin',
      challenge: 'Basic realm="sluice admin", charset="UTF-8"',
    }),
  );
  const server = createServer((req, res) => void handler(req, res));
  const url = `http://127.0.0.1:${await listen(server)}/admin/`;
  const browser = await launch();
  try {
    // (A browser that cannot answer the challenge gets the 401's message: security.test.ts reads it.)
    const page = await browser.newPage();
    await page.authenticate({ username: 'oncall', password: 'a-long-random-password' });
    await page.goto(url);
    await page.waitForSelector('#top tbody tr');
    expect(await page.$eval('#limiter', (select) => (select as unknown as { value: string }).value)).toBe('shop');
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
    await limiter.close();
  }
}, 60_000);
