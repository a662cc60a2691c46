import { describe, expect, it } from 'vitest';
import { LOGGED_PROXIES, loggedProxies } from './logged-proxies.js';

const names = (n: number) => Array.from({ length: n }, (_, i) => `proxy-${String(i).padStart(5, '0')}`);

describe('loggedProxies', () => {
  it('keeps a short list whole, with its count and no truncated flag', () => {
    expect(loggedProxies(['a', 'b'])).toEqual({ count: 2, proxies: ['a', 'b'] });
    expect(loggedProxies([])).toEqual({ count: 0, proxies: [] });
    expect(loggedProxies(names(LOGGED_PROXIES))).not.toHaveProperty('truncated');
  });

  it('cuts a fleet-sized list to the first max entries and says so; the count stays complete', () => {
    const all = names(10_000);
    const logged = loggedProxies(all);
    expect(logged).toEqual({ count: 10_000, proxies: all.slice(0, LOGGED_PROXIES), truncated: true });
    expect(JSON.stringify(logged).length).toBeLessThan(16 * 1024);
    expect(loggedProxies(all, 3)).toEqual({ count: 10_000, proxies: all.slice(0, 3), truncated: true });
  });
});
