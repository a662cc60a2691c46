// A nameserver on 127.0.0.1 (UDP) for tests of DNS resolution: answers A and AAAA from a table, NXDOMAIN
// for names it does not know, and never answers names listed as silent (a zone whose nameserver is down).
// Encoding and decoding by dns-packet; it counts the queries it got.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { type Answer, decode, encode } from 'dns-packet';

export interface DnsZone {
  a?: Record<string, string[]>;
  aaaa?: Record<string, string[]>;
  /** Names whose queries get no answer at all. */
  silent?: (name: string) => boolean;
}

export interface DnsServer {
  /** "127.0.0.1:port", for Resolver.setServers or GATEWAY_DNS_SERVERS. */
  address: string;
  queries: string[];
  close(): Promise<void>;
}

export async function startDnsServer(zone: DnsZone): Promise<DnsServer> {
  const socket = dgram.createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (msg, rinfo) => {
    let q: ReturnType<typeof decode>;
    try {
      q = decode(msg);
    } catch {
      return;
    }
    const question = q.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    queries.push(`${question.type} ${name}`);
    if (zone.silent?.(name)) return;
    const table = question.type === 'A' ? zone.a : question.type === 'AAAA' ? zone.aaaa : undefined;
    const known = name in (zone.a ?? {}) || name in (zone.aaaa ?? {});
    const answers: Answer[] = (table?.[name] ?? []).map((data) => ({
      type: question.type as 'A' | 'AAAA',
      class: 'IN',
      name: question.name,
      ttl: 60,
      data,
    }));
    const reply = encode({
      type: 'response',
      id: q.id,
      // NXDOMAIN (rcode 3) for an unknown name; NOERROR with no answers is "no record of this type".
      flags: (1 << 8) | (1 << 7) | (known ? 0 : 3),
      questions: q.questions,
      answers,
    });
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
