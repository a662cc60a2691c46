// Seed §9's `provider.WithMetrics` decorator, the GCP way: a function has no /metrics anyone scrapes, so
// every provider call logs one `provider.request` line {provider, op, result, latencyMs}, and Terraform's
// log-based metric `proxyplane/provider_requests` counts them by provider, op and result — the seed's
// provider_requests_total{provider,op,result}. `result` is `ok` or the error's class (quota, permanent,
// transient): the one place the class is read purely for observability. The call itself is untouched.
import { type Provider, ProviderError } from '../ports/provider.js';
import type { Logger } from './log/json-logger.js';

export const PROVIDER_REQUEST_EVENT = 'provider.request';

export type ProviderOp = 'create' | 'get' | 'delete' | 'lastCreateFailure' | 'listByTag';

export function withRequestLog(inner: Provider, log: Logger, now: () => number = Date.now): Provider {
  const timed = async <T>(op: ProviderOp, call: () => Promise<T>): Promise<T> => {
    const started = now();
    const fields = (result: string) => ({ provider: inner.name, op, result, latencyMs: now() - started });
    try {
      const value = await call();
      log.info('provider request', { event: 'provider.request', ...fields('ok') });
      return value;
    } catch (err) {
      const result = err instanceof ProviderError ? err.kind : 'error';
      log.warn('provider request failed', { event: 'provider.request', ...fields(result) });
      throw err;
    }
  };
  const last = inner.lastCreateFailure?.bind(inner);
  return {
    name: inner.name,
    create: (request) => timed('create', () => inner.create(request)),
    get: (providerId) => timed('get', () => inner.get(providerId)),
    delete: (providerId) => timed('delete', () => inner.delete(providerId)),
    listByTag: (options) => timed('listByTag', () => inner.listByTag(options)),
    ...(last ? { lastCreateFailure: (id: string) => timed('lastCreateFailure', () => last(id)) } : {}),
  };
}
