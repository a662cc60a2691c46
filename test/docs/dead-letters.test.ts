// docs/operations.md § Dead letters, step 1, against what a delivery that keeps failing logs. A message is
// dead-lettered only when its deliveries failed (a malformed one is acknowledged and never is), and the
// operator holds the dead letter: its payload (a reconcile request names its proxy) and its publishTime,
// never the original message's ID (Pub/Sub forwards a new message wrapping it). So every `jsonPayload`
// field the step says to search by must be on the lines a failing delivery writes, with the value the
// dead letter gives — here, reconcile's: the handler run as deployed (onReconcileEvent) over a provider
// whose call keeps failing.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { onReconcileEvent, type ReconcileDeps } from '../../functions/reconcile/src/handler.js';
import { noHealth } from '../../functions/reconcile/src/health-source.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { defaultPollIntervals } from '../../shared/src/domain/reconcile/types.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { FakeProvider } from '../../shared/src/testing/fake-provider.js';
import { InMemoryProxyStore } from '../../shared/src/testing/in-memory-proxy-store.js';
import { InMemoryReplacementSlots } from '../../shared/src/testing/in-memory-replacement-slots.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { repoRoot } from '../terraform/support/paths.js';

const ops = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
const deadLetters = ops.split('\n### Dead letters\n')[1]!.split('\n### ')[0]!;
/** Step 1 of the section: how to find why the message failed. */
const findWhy = deadLetters.split('\n1. ')[1]!.split('\n2. ')[0]!;

describe('docs/operations.md § Dead letters finds a failed delivery by what it logs', () => {
  it('step 1 searches reconcile requests by fields on every attempt’s lines, holding the dead letter’s values', async () => {
    const named = [...findWhy.matchAll(/jsonPayload\.(\w+)(?:="([^"]*)")?/g)].map((m) => ({
      field: m[1]!,
      value: m[2],
    }));
    expect(named.length).toBeGreaterThan(0);

    const store = new InMemoryProxyStore();
    const provider = new FakeProvider();
    const clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
    const log = memoryLogger();
    const deps: ReconcileDeps = {
      store,
      providers: new Map([['gce', provider]]),
      cloudInit: {
        resolve: async () => ({
          ok: true,
          script: '#!/bin/sh\n',
          digest: 'sha256:x',
          credentialsSecret: null,
        }),
        versionState: async () => 'readable',
      },
      health: noHealth,
      clock,
      intervals: defaultPollIntervals,
      publisher: { publish: async () => undefined },
      log,
      maxPasses: 6,
      slots: new InMemoryReplacementSlots(0, clock),
    };
    // The proxy the doc's own example names, so a query's value is the one the dead letter carries.
    const proxy = named.find((n) => n.field === 'proxy')?.value ?? 'p1';
    await store.create(aProxy({ name: proxy }));
    provider.failNext('create', 'transient', 100);
    const data = Buffer.from(JSON.stringify({ proxy, reason: 'created' })).toString('base64');
    for (let attempt = 1; attempt <= 5; attempt++) {
      const event = { data: { message: { data, messageId: `delivery-${attempt}`, attributes: { proxy } } } };
      await expect(onReconcileEvent(deps, event)).rejects.toMatchObject({ kind: 'transient' });
    }

    // What an attempt that failed logs at WARNING or above: what the operator finds near publishTime.
    const failing = log.lines.filter((l) => l.severity === 'ERROR' || l.severity === 'WARNING');
    expect(failing.length).toBeGreaterThanOrEqual(5);
    // On every attempt's lines (the last attempt is the one near publishTime), with the query's value.
    const unfindable = named.filter(
      ({ field, value }) =>
        !failing.every((l) => l[field] !== undefined && (value === undefined || String(l[field]) === value)),
    );
    expect(unfindable.map((n) => `jsonPayload.${n.field}`)).toEqual([]);
  });
});
