// dnsResolve against a real nameserver on loopback (test/support/dns-server.ts): both families, the
// hosts-file fallback only for names DNS says do not exist, and a silent nameserver that times out
// without touching libuv's thread pool.
import { lookup } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DnsServer, startDnsServer } from '../../../test/support/dns-server.js';
import { dnsResolve } from './dns-resolve.js';

let dns: DnsServer;

beforeAll(async () => {
  dns = await startDnsServer({
    a: { 'both.test': ['10.0.0.5'], 'v4.test': ['93.184.216.34'] },
    aaaa: { 'both.test': ['fd00::5'] },
    silent: (name) => name.endsWith('.hang.test'),
  });
});
afterAll(() => dns?.close());

const fallbackCalls: string[] = [];
const fallback = async (host: string) => {
  fallbackCalls.push(host);
  return ['127.0.0.9'];
};
const resolver = () => dnsResolve({ servers: [dns.address], timeoutMs: 300, tries: 1 }, fallback);

describe('dnsResolve', () => {
  it('returns every address of both families', async () => {
    expect((await resolver()('both.test')).sort()).toEqual(['10.0.0.5', 'fd00::5']);
    expect(await resolver()('v4.test')).toEqual(['93.184.216.34']);
    expect(dns.queries).toEqual(expect.arrayContaining(['A both.test', 'AAAA both.test']));
  });

  it('hands a name DNS does not know to the hosts-file look-up', async () => {
    fallbackCalls.length = 0;
    expect(await resolver()('nowhere.test')).toEqual(['127.0.0.9']);
    expect(fallbackCalls).toEqual(['nowhere.test']);
  });

  it('a silent nameserver is a timeout, not a fallback, and holds no thread of the pool meanwhile', async () => {
    fallbackCalls.length = 0;
    const r = resolver();
    const settled: boolean[] = [];
    // More pending look-ups than libuv has threads (4): with getaddrinfo the next one would queue behind them.
    const pending = Array.from({ length: 8 }, (_, i) =>
      r(`n${i}.hang.test`).then(
        () => settled.push(true),
        (e: NodeJS.ErrnoException) => {
          settled.push(true);
          return e.code;
        },
      ),
    );
    // A thread-pool job (getaddrinfo of localhost, from /etc/hosts) completes while all eight still wait.
    await lookup('localhost');
    expect(settled).toEqual([]);
    expect(await Promise.all(pending)).toEqual(Array(8).fill('ETIMEOUT'));
    expect(fallbackCalls).toEqual([]);
  });
});
