// Builders for Proxy resources in tests: valid by construction (parsed by the model), overridable.
import { emptyStatus, type ProxyResource, ProxySpec, type ProxyStatus } from '../domain/proxy.js';

let counter = 0;

/** Starts the uid sequence again: before each test file (test/support/per-file-setup.ts), so a file's uids
 *  are the same whatever files its worker ran before it. */
export function resetTestUids(): void {
  counter = 0;
}

/**
 * A deterministic, valid v4-shaped UUID per call (tests must not depend on randomness). `n` is in its first
 * 8 hex digits as well as its last 12, so two of them name two instances (`pp-` + the first 20 hex digits,
 * instance-name.ts): with it only at the end, every fixture proxy named the same VM.
 */
export function testUid(n = ++counter): string {
  const hex = n.toString(16);
  return `${hex.padStart(8, '0')}-0000-4000-8000-${hex.padStart(12, '0')}`;
}

export const managedSpec = (over: Record<string, unknown> = {}): ProxySpec =>
  ProxySpec.parse({ mode: 'managed', zone: 'us-central1-a', ...over });

export const externalSpec = (over: Record<string, unknown> = {}): ProxySpec =>
  ProxySpec.parse({ mode: 'external', endpoint: { host: '203.0.113.7', port: 8080 }, ...over });

export function aProxy(
  over: Partial<Omit<ProxyResource, 'status'>> & { status?: Partial<ProxyStatus> } = {},
): ProxyResource {
  const { status, ...rest } = over;
  return {
    name: 'proxy-a',
    uid: testUid(),
    generation: 1,
    createdAt: new Date('2026-01-01T00:00:00Z'),
    deletionRequestedAt: null,
    spec: managedSpec(),
    ...rest,
    // A status a pass wrote (any given) has an external proxy's endpoint host as its ip, as reconcile copies
    // it, unless the test says otherwise; none given is a proxy no pass has seen (ip null).
    status: {
      ...emptyStatus(),
      ...(status && rest.spec?.mode === 'external' ? { ip: rest.spec.endpoint.host } : {}),
      ...status,
    },
  };
}
