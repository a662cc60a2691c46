// squid's default block list against the gateway's SSRF guard: an address is refused by one exactly when
// it is refused by the other, on the edges of every range either of them lists, on those edges carried
// inside every IPv6 form that embeds an IPv4 address, and on random addresses — so that a range added to
// the guard (or a slip in the derivation) cannot leave the managed proxies open to it.
import { describe, expect, it } from 'vitest';
import { cidrContains, formatIpv6, type IpAddress, parseCidr, parseIp, parseIpv6 } from '../gateway/ip.js';
import { classifyIp, EMBEDDING, V4_RANGES, V6_RANGES } from '../gateway/ssrf.js';
import { DEFAULT_BLOCKED_DESTINATIONS } from './blocked-destinations.js';
import { renderSquidConf } from './squid-conf.js';

const squidList = DEFAULT_BLOCKED_DESTINATIONS.map((c) => parseCidr(c)!);
/** squid's `dst` acl: IPv4-mapped addresses are IPv4 (cidrContains unmaps the address, as squid does). */
const squidBlocks = (ip: IpAddress) => squidList.some((c) => cidrContains(c, ip));
const guardRefuses = (ip: IpAddress) => classifyIp(ip) !== null;

/** Deterministic bytes (a test must not depend on the run). */
function* random(seed: number, n: number, length: number): Generator<Uint8Array> {
  let x = seed;
  for (let i = 0; i < n; i++) {
    const out = new Uint8Array(length);
    for (let j = 0; j < length; j++) {
      x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0;
      out[j] = x >>> 24;
    }
    yield out;
  }
}

/** The first and last address of a range, and the ones just outside it. */
function edges(cidr: string): IpAddress[] {
  const c = parseCidr(cidr)!;
  const first = c.bytes.slice();
  const last = c.bytes.slice();
  for (let bit = c.prefix; bit < first.length * 8; bit++) {
    first[bit >> 3]! &= ~(0x80 >> (bit & 7));
    last[bit >> 3]! |= 0x80 >> (bit & 7);
  }
  const step = (b: Uint8Array, d: 1 | -1) => {
    const out = b.slice();
    for (let i = out.length - 1; i >= 0; i--) {
      const v = out[i]! + d;
      out[i] = v & 0xff;
      if (v >= 0 && v <= 0xff) break;
    }
    return out;
  };
  return [first, last, step(first, -1), step(last, 1)].map((bytes) => ({ family: c.family, bytes }));
}

/** An IPv4 address inside each IPv6 form that carries one. */
const embeddings = (v4: IpAddress): IpAddress[] =>
  EMBEDDING.map(([prefix, offset]) => {
    const bytes = parseCidr(prefix)!.bytes.slice();
    bytes.set(v4.bytes, offset);
    return { family: 6, bytes };
  });

describe("squid's default block list", () => {
  const v4Edges = [
    ...V4_RANGES.map(([c]) => c),
    ...DEFAULT_BLOCKED_DESTINATIONS.filter((c) => !c.includes(':')),
  ]
    .flatMap(edges)
    .filter((ip) => ip.family === 4);
  const samples: IpAddress[] = [
    ...[...V6_RANGES.map(([c]) => c), ...EMBEDDING.map(([c]) => c), ...DEFAULT_BLOCKED_DESTINATIONS].flatMap(
      edges,
    ),
    ...v4Edges,
    ...v4Edges.flatMap(embeddings),
    ...[...random(1, 3000, 4)].map((bytes) => ({ family: 4 as const, bytes })),
    ...[...random(2, 3000, 16)].map((bytes) => ({ family: 6 as const, bytes })),
    ...[...random(3, 3000, 4)].flatMap((bytes) => embeddings({ family: 4, bytes })),
  ];

  it('refuses exactly what the SSRF guard refuses', () => {
    const disagree = samples
      .filter((ip) => squidBlocks(ip) !== guardRefuses(ip))
      .map((ip) => `${ip.family === 4 ? ip.bytes.join('.') : formatIpv6(ip.bytes)}: guard ${classifyIp(ip)}`);
    expect(disagree).toEqual([]);
    expect(samples.length).toBeGreaterThan(12_000);
  });

  it.each([
    // NAT64 and 6to4 forms of the metadata server, loopback and RFC 1918: refused.
    ['64:ff9b::a9fe:a9fe', true],
    ['64:ff9b::7f00:1', true],
    ['2002:a9fe:a9fe::1', true],
    ['2002:a00:1::', true],
    ['::ffff:0:a9fe:a9fe', true],
    ['64:ff9b:1::1', true], // local-use NAT64 (RFC 8215): whatever it carries
    // Public IPv4 through NAT64 or 6to4: reached as before (a VPC that uses NAT64 needs it).
    ['64:ff9b::808:808', false],
    ['2002:808:808::1', false],
    // What the list held before: still refused.
    ['::', true],
    ['::1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['fd00::1', true],
  ])('%s refused: %s', (address, refused) => {
    expect(squidBlocks(parseIp(address)!)).toBe(refused);
  });

  it('lists no entry inside another (squid warns about each) and fits one acl line', () => {
    for (const [i, c] of squidList.entries()) {
      const inner = squidList.filter((o, j) => j !== i && o.family === c.family && cidrContains(c, o));
      expect(inner.map((o) => DEFAULT_BLOCKED_DESTINATIONS[squidList.indexOf(o)])).toEqual([]);
    }
    expect(renderSquidConf({ port: 3128 })).toContain(
      `acl proxyplane_blocked dst ${DEFAULT_BLOCKED_DESTINATIONS.join(' ')}\n`,
    );
  });
});

describe('formatIpv6', () => {
  it.each([
    ['0:0:0:0:0:0:0:0', '::'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['64:ff9b:0:0:0:0:a9fe:a9fe', '64:ff9b::a9fe:a9fe'],
    ['2001:db8:0:1:0:0:0:1', '2001:db8:0:1::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'],
  ])('%s is %s', (full, short) => {
    expect(formatIpv6(parseIpv6(full)!)).toBe(short);
  });

  it('reads back as the same address', () => {
    for (const bytes of random(4, 2000, 16)) {
      for (let i = 0; i < 16; i += 3) if (bytes[0]! & (1 << (i % 8))) bytes[i] = 0;
      expect(parseIpv6(formatIpv6(bytes))).toEqual(bytes);
    }
  });
});
