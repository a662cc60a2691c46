// A ProxyWatcher over a fixed listing, for handler tests whose fleet does not change during a run (one that
// must change uses InMemoryProxyStore, whose view follows it).
import type { ProxyResource } from '../domain/proxy.js';
import type { ProxyListing, ProxyView, ProxyWatcher } from '../ports/proxy-store.js';

export const fixedView = (listing: ProxyListing): ProxyView => ({
  current: () => listing,
  failure: () => null,
  stop() {},
});

export const fixedFleet = (proxies: ProxyResource[]): ProxyWatcher => ({
  watchAll: async () => fixedView({ proxies, skipped: [] }),
});
