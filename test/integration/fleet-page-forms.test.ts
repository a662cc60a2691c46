// The fleet page's sign-in and sign-out forms in a real browser (Debian's Chromium), on an origin that is
// not loopback by name (`http://fleet.test`, mapped to 127.0.0.1): there Chromium sends no Sec-Fetch-*
// headers (not a trustworthy origin), so the page's own form posts are told from another site's by their
// Origin alone — which a page answered with `Referrer-Policy: no-referrer` sends as "null". Another
// site's page (`http://elsewhere.test`) posting the same forms is refused and changes no cookie.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryFleetFeed } from '../../functions/api/src/fleet/feed.js';
import { ADMIN_TOKEN, harness } from '../../functions/api/src/testing/harness.js';
import { CHROMIUM, ensureChromium } from '../support/chromium.js';

const haveChromium = ensureChromium();

describe.skipIf(!haveChromium)('fleet page forms in a browser, on a plain-http origin', () => {
  const { app } = harness({ fleet: new InMemoryFleetFeed() });
  const api = createAdaptorServer({ fetch: app.fetch });
  /** Another site: a page whose form posts to the fleet page's sign-out (or sign-in) on load. */
  let target = '';
  const elsewhere = http.createServer((req, res) => {
    const action = req.url === '/login' ? `${target}/fleet/login` : `${target}/fleet/logout`;
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(
      `<form id="f" method="post" action="${action}"><input name="token" value="${ADMIN_TOKEN}"></form>` +
        `<script>document.getElementById('f').submit()</script>`,
    );
  });
  const profile = mkdtempSync(join(tmpdir(), 'fleet-forms-chromium-'));
  let browser: BrowserContext;
  let elsewhereUrl = '';
  const listen = (server: http.Server) =>
    new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
    );

  beforeAll(async () => {
    target = `http://fleet.test:${await listen(api as http.Server)}`;
    elsewhereUrl = `http://elsewhere.test:${await listen(elsewhere)}`;
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        // Names that are not loopback by name, for loopback addresses: no request leaves the machine.
        '--host-resolver-rules=MAP fleet.test 127.0.0.1, MAP elsewhere.test 127.0.0.1',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    rmSync(profile, { recursive: true, force: true });
    api.close();
    elsewhere.close();
  }, 60_000);

  /** Signs in through the page's own form, as a person does. */
  const signIn = async (page: Page) => {
    await page.goto(`${target}/fleet/login`);
    await page.fill('input[name="token"]', ADMIN_TOKEN);
    const signedIn = page.waitForURL(`${target}/fleet`);
    await page.click('button');
    await signedIn;
  };
  const sessionCookie = async () =>
    (await browser.cookies(`${target}/fleet`)).find((c) => c.name === 'proxyplane_fleet')?.value ?? '';

  it("signs in and out through the page's own forms", async () => {
    const page = await browser.newPage();
    try {
      await signIn(page);
      expect(await page.locator('form[action="/fleet/logout"]').count()).toBe(1);
      expect(await sessionCookie()).not.toBe('');

      const signedOut = page.waitForURL(`${target}/fleet/login`);
      await page.click('form[action="/fleet/logout"] button');
      await signedOut;
      expect(await sessionCookie()).toBe('');
    } finally {
      await page.close();
    }
  }, 60_000);

  it("refuses another site's page posting the sign-out or the sign-in, and keeps the cookie as it was", async () => {
    const page = await browser.newPage();
    try {
      await signIn(page);
      const before = await sessionCookie();
      expect(before).not.toBe('');

      for (const path of ['/logout', '/login']) {
        const answer = page.waitForResponse((r) => r.url().startsWith(`${target}/fleet${path}`));
        await page.goto(`${elsewhereUrl}${path}`);
        expect((await answer).status()).toBe(403);
        expect(await sessionCookie()).toBe(before);
      }
    } finally {
      await page.close();
    }
  }, 60_000);
});
