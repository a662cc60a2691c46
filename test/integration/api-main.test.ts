// The service as it is deployed: `node functions/api/src/main.ts` in its own process, configured only by
// its environment, against the Firestore and Pub/Sub emulators. Checks the composition root: the start-up
// refusal without credentials or with a malformed setting, the loud local mode, MANAGED_PROXY_PORTS reaching
// the admin routes, create → Firestore document + reconcile request, and the fleet-by-phase gauge.
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import { waitForHttp } from '../../emulators/launcher/wait.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { testProjectId } from '../support/emulators.js';
import { pollUntil } from '../support/poll.js';

const TOKEN = 'main-test-admin-token-0123456789';

interface Service {
  child: ChildProcess;
  url: string;
  lines: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

async function startMain(env: Record<string, string>, unset: string[] = []): Promise<Service> {
  const port = await freePort();
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('ADMIN_') && k !== 'PROXYPLANE_LOCAL' && !unset.includes(k),
    ),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'functions/api/src/main.ts'], {
    cwd: repoRoot,
    env: { ...inherited, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let buffered = '';
  child.stdout?.on('data', (d: Buffer) => {
    buffered += d.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    for (const p of parts) if (p.trim()) lines.push(JSON.parse(p));
  });
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  return { child, url: `http://127.0.0.1:${port}`, lines, exited, stop };
}

/**
 * How long the API process may take to answer /healthz: `node --import tsx` compiles main.ts and its imports
 * on the first start of a fresh clone, on a machine the rest of the suite loads (30 s was seen to run out).
 */
const START_MS = 90_000;

describe('functions/api/src/main.ts', { timeout: 150_000 }, () => {
  const started: Service[] = [];
  const start = async (env: Record<string, string>, unset: string[] = []) => {
    const s = await startMain(env, unset);
    started.push(s);
    return s;
  };
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
  });

  it('refuses to start with no admin credential outside local mode (no PROXYPLANE_LOCAL, no emulator store)', async () => {
    const s = await start({}, ['FIRESTORE_EMULATOR_HOST']);
    expect(await s.exited).toBe(1);
    expect(s.lines).toContainEqual(
      expect.objectContaining({ severity: 'ERROR', message: expect.stringContaining('refuses to start') }),
    );
  });

  it('refuses to start on a malformed ADMIN_TOKENS, without printing the token', async () => {
    const s = await start({ ADMIN_TOKENS: 'ci:tooshort' });
    expect(await s.exited).toBe(1);
    expect(JSON.stringify(s.lines)).not.toContain('tooshort');
  });

  it('refuses to start on a malformed MANAGED_PROXY_PORTS, naming it and the expected form', async () => {
    const s = await start({ ADMIN_TOKENS: `test:${TOKEN}`, MANAGED_PROXY_PORTS: '3128,squid' });
    expect(await s.exited).toBe(1);
    const refusal = s.lines.find((l) => String(l.message).includes('refuses to start'));
    expect(refusal).toMatchObject({ severity: 'ERROR' });
    expect(String(refusal?.message)).toMatch(/MANAGED_PROXY_PORTS[\s\S]*comma-separated TCP ports/);
  });

  it('with MANAGED_PROXY_PORTS as Terraform sets it, refuses a managed proxy on another port', async () => {
    const projectId = testProjectId('demo-apimain');
    const pubsub = new PubSub({ projectId });
    const db = new Firestore({ projectId });
    try {
      await pubsub.createTopic('reconcile-requests');
      const s = await start({
        ADMIN_TOKENS: `test:${TOKEN}`,
        GOOGLE_CLOUD_PROJECT: projectId,
        MANAGED_PROXY_PORTS: '3128',
      });
      await waitForHttp(`${s.url}/healthz`, { timeoutMs: START_MS });
      const create = (name: string, port: number) =>
        fetch(`${s.url}/v1/proxies`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            name,
            spec: { mode: 'managed', zone: 'us-central1-a', port, credentialsRef: { secret: 'proxy-creds' } },
          }),
        });
      const refused = await create('elsewhere', 8080);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: 'port_not_allowed', allowedPorts: [3128] });
      expect(await new FirestoreProxyStore(db).get('elsewhere')).toBeNull();
      expect((await create('on-3128', 3128)).status).toBe(201);
      expect(await s.stop()).toBe(0);
    } finally {
      await pubsub.close();
      await db.terminate();
    }
  });

  it('runs open in local mode (the store is the emulator), and says so loudly', async () => {
    const s = await start({ GOOGLE_CLOUD_PROJECT: testProjectId('demo-apimain') });
    await waitForHttp(`${s.url}/healthz`, { timeoutMs: START_MS });
    expect(s.lines).toContainEqual(
      expect.objectContaining({ severity: 'WARNING', message: expect.stringContaining('ADMIN AUTH IS OFF') }),
    );
    const res = await fetch(`${s.url}/v1/proxies`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ proxies: [], count: 0 });
  });

  it('creates a proxy: 201, the Firestore document, and a reconcile request on Pub/Sub; stops cleanly', async () => {
    const projectId = testProjectId('demo-apimain');
    const pubsub = new PubSub({ projectId });
    const db = new Firestore({ projectId });
    try {
      const [topic] = await pubsub.createTopic('reconcile-requests');
      const [sub] = await topic.createSubscription('reconcile-requests--test');
      // Listening from here, before the POST; the wait for the message starts only at the 201, so the
      // process start (up to START_MS for /healthz on a loaded machine) does not eat into it.
      const received: unknown[] = [];
      sub.once('message', (m) => {
        m.ack();
        received.push(JSON.parse(m.data.toString()));
      });

      const s = await start({ ADMIN_TOKENS: `test:${TOKEN}`, GOOGLE_CLOUD_PROJECT: projectId });
      await waitForHttp(`${s.url}/healthz`, { timeoutMs: START_MS });
      expect(s.lines).toContainEqual(
        expect.objectContaining({ message: expect.stringContaining('listening'), auth: 'tokens(1)' }),
      );
      expect((await fetch(`${s.url}/v1/proxies`)).status).toBe(401);

      const res = await fetch(`${s.url}/v1/proxies`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'from-main',
          spec: { mode: 'external', endpoint: { host: '127.0.0.9', port: 3128 } },
        }),
      });
      expect(res.status).toBe(201);
      await pollUntil(
        () => received.length,
        (n) => n > 0,
        30_000,
        'the reconcile request on Pub/Sub after the 201',
      );
      expect(received).toEqual([{ proxy: 'from-main', reason: 'created' }]);
      const stored = await new FirestoreProxyStore(db).get('from-main');
      expect(stored?.proxy).toMatchObject({ name: 'from-main', generation: 1, spec: { mode: 'external' } });
      // The fleet by phase, counted from the store at the scrape (seed §9 proxy_operator_proxies{phase}).
      const metrics = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const text = await metrics.text();
      expect(text).toContain('proxyplane_proxies{phase="Pending"} 1');
      expect(text).toContain('proxyplane_proxies{phase="Ready"} 0');

      expect(await s.stop()).toBe(0);
      expect(s.lines).toContainEqual(expect.objectContaining({ message: 'api stopping (SIGTERM)' }));
      expect(JSON.stringify(s.lines)).not.toContain(TOKEN);
      await sub.close();
    } finally {
      await pubsub.close();
      await db.terminate();
    }
  });

  it('answers a request that names no Host (HTTP/1.0), as the app, not a bare 400 of the adaptor', async () => {
    const s = await start({ GOOGLE_CLOUD_PROJECT: testProjectId('demo-apimain') });
    await waitForHttp(`${s.url}/healthz`, { timeoutMs: START_MS });
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(s.url).port) });
    let answer = '';
    socket.on('data', (d: Buffer) => {
      answer += d.toString();
    });
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write('GET /healthz HTTP/1.0\r\n\r\n');
    await ended;
    expect(answer).toMatch(/^HTTP\/1\.[01] 200 /);
  });

  it('a second SIGTERM while requests are still in flight is only logged: the stop finishes and exits 0', async () => {
    const s = await start({ GOOGLE_CLOUD_PROJECT: testProjectId('demo-apimain') });
    await waitForHttp(`${s.url}/healthz`, { timeoutMs: START_MS });
    // A request whose head is still arriving: the stop waits for it, up to its grace.
    const slow = connect({ host: '127.0.0.1', port: Number(new URL(s.url).port) });
    slow.on('error', () => {});
    await new Promise<void>((resolve) => slow.once('connect', () => resolve()));
    slow.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const stopping = () => s.lines.some((l) => l.message === 'api stopping (SIGTERM)');
    s.child.kill('SIGTERM');
    for (let i = 0; i < 100 && !stopping(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(stopping()).toBe(true);
    s.child.kill('SIGTERM');
    expect(await s.stop()).toBe(0);
    expect(s.child.signalCode).toBeNull();
    expect(s.lines).toContainEqual(expect.objectContaining({ message: 'api already stopping (SIGTERM)' }));
    slow.destroy();
  });
});
