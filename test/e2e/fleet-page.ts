// The fleet page in a real browser (Debian's Chromium driven by playwright-core) against `npm start` with
// the demo (the plane demo.test.ts starts and runs these tests on, after its walkthrough): every demo proxy is listed with its phase; killing one proxy's process through the Compute
// emulator's fault endpoint turns its row Unhealthy without a reload (SSE); the token never reaches the
// page. Screenshots go to test-artifacts/ (fleet-page.png is the one docs/ shows).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComputeAdminClient } from '../../emulators/compute/admin-client.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { CHROMIUM, ensureChromium } from '../support/chromium.js';
import type { DemoPlane } from '../support/demo-plane.js';

const ARTIFACTS = join(repoRoot, 'test-artifacts');

/** The fleet page's tests, as a describe block of the file that started `demo`. */
export function fleetPageTests(demo: DemoPlane): void {
  const haveChromium = ensureChromium();
  if (!haveChromium)
    console.warn(`fleet page test skipped: ${CHROMIUM} is missing and apt-get is not available`);

  describe.skipIf(!haveChromium)('the fleet page in a browser', () => {
    let exports: Record<string, string>;
    let browser: BrowserContext;
    let page: Page;
    const profile = mkdtempSync(join(tmpdir(), 'fleet-chromium-'));

    beforeAll(async () => {
      mkdirSync(ARTIFACTS, { recursive: true });
      exports = demo.exports();
      browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1400, height: 640 },
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      page = browser.pages()[0] ?? (await browser.newPage());
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      rmSync(profile, { recursive: true, force: true });
    }, 90_000);

    const row = (name: string) => page.locator(`#fleet-body tr[data-name="${name}"]`);

    it('signs in once with ?token=, drops it from the address, and never puts it in the page', async () => {
      const token = exports.PROXYPLANE_ADMIN_TOKEN!;
      const res = await page.goto(`${exports.PROXYPLANE_API_URL}/fleet?token=${encodeURIComponent(token)}`);
      expect(res?.status()).toBe(200);
      expect(page.url()).toBe(`${exports.PROXYPLANE_API_URL}/fleet`);
      expect(await page.content()).not.toContain(token);
      const cookies = await browser.cookies();
      expect(cookies.find((c) => c.name === 'proxyplane_fleet')).toMatchObject({
        httpOnly: true,
        sameSite: 'Strict',
      });
      expect(await page.evaluate(() => document.cookie)).toBe('');
    });

    it('lists every demo proxy with its phase, live', async () => {
      for (const name of ['demo-us-1', 'demo-us-2', 'demo-eu-1', 'demo-external', 'demo-socks']) {
        await expect.poll(() => row(name).getAttribute('data-phase')).toBe('Ready');
        expect(await row(name).locator('[data-col="phase"]').textContent()).toBe('Ready');
      }
      await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
    });

    it('shows a lease and a cooldown as they happen', async () => {
      const crawler = {
        authorization: `Bearer ${exports.PROXYPLANE_CRAWLER_TOKEN}`,
        'content-type': 'application/json',
      };
      const res = await fetch(`${exports.PROXYPLANE_API_URL}/v1/leases`, {
        method: 'POST',
        headers: crawler,
        // demo-us-1: the eu proxy is in the gateway pool, which leases never take (docs/leases.md).
        body: JSON.stringify({
          selector: { region: 'us', tier: 'standard' },
          target: 'shop.example',
          ttlSeconds: 600,
        }),
      });
      expect(res.status).toBe(201);
      const { leaseId } = (await res.json()) as { leaseId: string };
      await expect
        .poll(() => row('demo-us-1').locator('[data-col="leases"]').textContent(), { timeout: 15_000 })
        .toBe('1/4');
      const report = await fetch(`${exports.PROXYPLANE_API_URL}/v1/leases/${leaseId}/report`, {
        method: 'POST',
        headers: crawler,
        body: JSON.stringify({ result: 'rate_limited' }),
      });
      expect(report.status).toBe(204);
      await expect
        .poll(() => row('demo-us-1').locator('[data-col="cooldowns"]').textContent(), { timeout: 15_000 })
        .toMatch(/^shop\.example \d+[sm]/);
    });

    it('turns a killed proxy Unhealthy without a reload', async () => {
      await page.evaluate(() => {
        (window as unknown as { stillHere: boolean }).stillHere = true;
      });
      const status = (await (
        await fetch(`${exports.PROXYPLANE_API_URL}/v1/proxies/demo-us-1`, {
          headers: { authorization: `Bearer ${exports.PROXYPLANE_ADMIN_TOKEN}` },
        })
      ).json()) as { status: { providerId: string } };
      const [, zone, , name] = status.status.providerId.split('/');
      const compute = new ComputeAdminClient(`http://${exports.COMPUTE_EMULATOR_HOST}`);
      await compute.killProxy(exports.GOOGLE_CLOUD_PROJECT!, zone!, name!);

      await row('demo-us-1').and(page.locator('[data-phase="Unhealthy"]')).waitFor({ timeout: 90_000 });
      expect(await row('demo-us-1').locator('[data-col="phase"]').textContent()).toBe('Unhealthy');
      expect(await row('demo-us-1').locator('[data-col="basic"]').textContent()).toBe('UNHEALTHY');
      expect(await row('demo-us-2').getAttribute('data-phase')).toBe('Ready');
      expect(await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere)).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, 'fleet-page.png') });
    }, 120_000);

    it("opens a proxy's detail (spec, status, recent events) from its row", async () => {
      const detail = page.locator('#detail');
      // The row is re-rendered live (the killed proxy above is being replaced): a click that lands on a
      // row being swapped out opens nothing, so it is clicked again until the detail shows.
      const heading = detail.locator('h2').filter({ hasText: 'demo-us-1' });
      for (let tries = 0; tries < 8 && !(await heading.isVisible()); tries++) {
        await row('demo-us-1').locator('[data-col="location"]').click();
        await heading.waitFor({ timeout: 5_000 }).catch(() => {});
      }
      await heading.waitFor({ timeout: 5_000 });
      const text = (await detail.textContent()) ?? '';
      expect(text).toContain('Recent events');
      expect(text).toMatch(/Healthy=False/);
      expect(text).toContain('"zone": "us-central1-a"');
      expect(text).toContain('"phase": "Unhealthy"');
      await page.screenshot({ path: join(ARTIFACTS, 'fleet-page-detail.png') });
    });
  });
}
