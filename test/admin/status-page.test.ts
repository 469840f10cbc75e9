/**
 * The admin router's status page in a real headless Chromium (puppeteer-core driving the system's
 * chromium): it lists the limiter, shows its most limited key (as the keyed hash topLimited gives), looks a
 * key up, and a screenshot of it is written to test-results/. The page loads nothing but its own script.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, fixedWindow } from '@sluice/core';
import { adminRouter, nodeAdminHandler } from '@sluice/core/admin';
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
  const browser = await puppeteer.launch({
    executablePath: chromium(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
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
