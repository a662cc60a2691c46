// The first five minutes, as a newcomer lives them: `npm start` (with the demo) on an empty plane shows
// the demo fleet turning Ready, then prints how to lease a proxy and fetch the demo page through it. This
// test runs those printed lines, as printed, in bash with the printed exports, and checks that the page
// came back through a US demo proxy (its address, not ours) and that the lease was given back. Then, on
// the same plane, the fleet page in a browser (fleet-page.ts): it comes after the walkthrough because it
// leaves a lease and a cooldown behind and kills a proxy.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { GREETING } from '../../emulators/demo-target/server.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { useDemoPlane } from '../support/demo-plane.js';
import type { NpmStart } from '../support/npm-start.js';
import { fleetPageTests } from './fleet-page.js';

const run = promisify(execFile);

/** The indented lines of the printed block that starts with `  # <heading>`, up to the next blank line. */
function block(out: string, heading: string): string[] {
  const lines = out.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`  # ${heading}`));
  if (start < 0) throw new Error(`no "# ${heading}" block in:\n${out}`);
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return lines.slice(start + 1, end).map((l) => l.slice(2));
}

async function bash(script: string, env: Record<string, string>) {
  return run('bash', ['-euo', 'pipefail', '-c', script], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/tmp',
      METADATA_SERVER_DETECTION: 'none',
      ...env,
    },
    // Each printed block runs `npx proxyplane …` (a tsx start each) and curl through the demo proxies; on a
    // loaded two-core runner a block took up to 36 s, so 60 s was too close. Below the walkthrough's 180 s.
    timeout: 150_000,
  });
}

interface FleetState {
  rows: Array<{
    name: string;
    phase: string;
    ip: string | null;
    attributes: Record<string, string>;
    activeLeases: number;
  }>;
}

describe('npm start with the demo', () => {
  const demo = useDemoPlane();

  describe('the walkthrough it prints', () => {
    let plane: NpmStart;
    let exports: Record<string, string>;

    beforeAll(() => {
      plane = demo.plane();
      exports = demo.exports();
    });

    async function fleetState(): Promise<FleetState> {
      const res = await fetch(`${exports.PROXYPLANE_API_URL}/fleet/api/state`, {
        headers: { authorization: `Bearer ${exports.PROXYPLANE_ADMIN_TOKEN}` },
      });
      expect(res.status).toBe(200);
      return (await res.json()) as FleetState;
    }

    it('shows each demo proxy on its way to Ready, in two zones of different attributes plus an external one', async () => {
      const out = plane.output();
      for (const name of ['demo-us-1', 'demo-us-2', 'demo-eu-1', 'demo-external', 'demo-socks']) {
        expect(out).toMatch(new RegExp(`${name}\\s+Ready`));
      }
      const rows = (await fleetState()).rows;
      expect(rows.map((r) => [r.name, r.phase])).toEqual([
        ['demo-eu-1', 'Ready'],
        ['demo-external', 'Ready'],
        ['demo-socks', 'Ready'],
        ['demo-us-1', 'Ready'],
        ['demo-us-2', 'Ready'],
      ]);
      expect(new Set(rows.map((r) => r.attributes.region))).toEqual(new Set(['us', 'eu', 'local']));
    });

    it('leases a proxy and fetches the demo page through it exactly as printed', async () => {
      const lines = block(plane.output(), 'lease');
      expect(lines.join('\n')).toMatch(/leases acquire[\s\S]*curl[\s\S]*leases release/);
      const { stdout } = await bash(lines.join('\n'), exports);
      expect(stdout).toContain(GREETING);
      // The page names the address it was fetched from: a US demo proxy's, not this machine's.
      const seenFrom = /came to you from <strong>([\d.]+)</.exec(stdout)?.[1];
      const usIps = (await fleetState()).rows.filter((r) => r.attributes.region === 'us').map((r) => r.ip);
      expect(usIps).toContain(seenFrom);
      // …and the printed release gave the lease back.
      expect((await fleetState()).rows.map((r) => r.activeLeases)).toEqual([0, 0, 0, 0, 0]);
    });

    it('fetches the demo site through the gateway as printed: plain HTTP, and HTTPS by CONNECT', async () => {
      // Printed only once the gateway's snapshot carries the pool: Ready alone raced the snapshot pass.
      const out = plane.output();
      const carried = out.search(/gateway carries the demo pool: \d+ proxies/);
      expect(carried).toBeGreaterThan(-1);
      expect(carried).toBeLessThan(out.indexOf('through the gateway'));
      const lines = block(out, 'through the gateway');
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatch(/--cacert '[^']+cert\.pem' -x http:\/\/\S+ https:\/\//);
      for (const line of lines) {
        const { stdout } = await bash(line, exports);
        expect(stdout).toContain(GREETING);
        // Carried by a gateway-pool VM (demo-us-2 or demo-eu-1), not this machine.
        const seenFrom = /came to you from <strong>([\d.]+)</.exec(stdout)?.[1];
        const pool = (await fleetState()).rows
          .filter((r) => r.name === 'demo-us-2' || r.name === 'demo-eu-1')
          .map((r) => r.ip);
        expect(pool).toContain(seenFrom);
      }
    });

    it('fetches the demo site with POST /v1/fetch: plain HTTP, and HTTPS verified against the demo certificate', async () => {
      const out = plane.output();
      // The README's way to the fetch endpoint: the exported URL, the printed endpoint's.
      const gateway = exports.PROXYPLANE_GATEWAY_URL;
      expect(gateway).toBe(/^\s+gateway\s+(http:\/\/\S+)$/m.exec(out)?.[1]);
      const plain = /--target (\S+)/.exec(out)?.[1];
      const tls = /-x http:\/\/\S+ https:\/\/([^/\s]+)\//.exec(out)?.[1];
      expect([gateway, plain, tls].every(Boolean)).toBe(true);
      // The README's way to the gateway's client credentials: the user:pass of the printed proxy URL.
      const client = new URL(exports.PROXYPLANE_GATEWAY_PROXY_URL!);
      const basic = Buffer.from(`${client.username}:${client.password}`).toString('base64');
      for (const url of [`http://${plain}/json`, `https://${tls}/json`]) {
        const res = await fetch(`${gateway}/v1/fetch`, {
          method: 'POST',
          headers: { authorization: `Basic ${basic}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url }),
        });
        // Before the gateway trusted the demo certificate: 502 target_failed, DEPTH_ZERO_SELF_SIGNED_CERT.
        expect([url, res.status, await res.text()]).toEqual([url, 200, expect.stringContaining(GREETING)]);
      }
    });

    it('the CLI reads the real plane: fleet watch and jobs list', async () => {
      const fleet = await bash('npx proxyplane fleet watch --once', exports);
      expect(fleet.stdout).toMatch(/^demo-eu-1\s+Ready\s+AVAILABLE\/AVAILABLE/m);
      const jobs = await bash('npx proxyplane jobs list', exports);
      expect(jobs.stdout).toMatch(/^probe-tick\s+ENABLED\s/m);
    });

    it('leases the SOCKS5 proxy and fetches the demo page through its socks5:// URL as printed', async () => {
      const lines = block(plane.output(), 'a SOCKS5 proxy');
      expect(lines.join('\n')).toMatch(/tier=socks5 --protocol socks5[\s\S]*curl[\s\S]*leases release/);
      const { stdout } = await bash(`${lines.join('\n')}\necho "url=$PROXYPLANE_PROXY_URL"`, exports);
      expect(stdout).toContain(GREETING);
      expect(stdout).toMatch(/^url=socks5:\/\/[^@\s]+@127\.0\.0\.1:\d+$/m);
      expect((await fleetState()).rows.find((r) => r.name === 'demo-socks')?.activeLeases).toBe(0);
    });

    it('the curl-only lease works as printed, and its proxy URL fetches the page', async () => {
      const { stdout } = await bash(block(plane.output(), 'the same with curl alone').join('\n'), exports);
      const grant = JSON.parse(stdout) as { leaseId: string; proxy: { url: string } };
      expect(grant.proxy.url).toMatch(/^http:\/\/demo:[^@]+@127\.0\.\d+\.\d+:\d+$/);
      const target = /--target (\S+)/.exec(plane.output())![1]!;
      const page = await bash(`curl -sS -x "$URL" http://${target}/`, { URL: grant.proxy.url });
      expect(page.stdout).toContain(GREETING);
      await bash(
        `curl -sS -f -X DELETE -H "Authorization: Bearer $PROXYPLANE_CRAWLER_TOKEN" "$PROXYPLANE_API_URL/v1/leases/${grant.leaseId}"`,
        exports,
      );
    });
    // Several bash() runs per test, each up to 150 s: the 60 s default did not cover them (the SOCKS5 lease
    // alone took up to 35.8 s on a loaded runner).
  }, 180_000);

  fleetPageTests(demo);
});
