// Each source's share of the proxy listener's unadmitted connections (PreAuthGate): exact once it matters,
// and no source address read (a getpeername(2) each) while fewer connections wait than one source may hold.
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { PreAuthGate } from './pre-auth-gate.js';

/** A stand-in socket from `address`, counting the reads of its address. */
function from(address: string, reads = { n: 0 }) {
  return Object.assign(
    {
      get remoteAddress() {
        reads.n++;
        return address;
      },
    },
    { reads },
  ) as unknown as Socket & { reads: { n: number } };
}

describe('PreAuthGate', () => {
  it('closes the connection past a source’s share, and only that source’s', () => {
    const gate = new PreAuthGate(3);
    const a = [from('10.0.0.1'), from('10.0.0.1'), from('10.0.0.1')];
    for (const s of a) expect(gate.admit(s)).toBe(true);
    expect(gate.admit(from('10.0.0.1'))).toBe(false);
    expect(gate.refused).toBe(1);
    expect(gate.admit(from('10.0.0.2'))).toBe(true);
    // One of the first source's admitted (or closed): room for one more from it, and no more.
    gate.release(a[0]!);
    expect(gate.admit(from('10.0.0.1'))).toBe(true);
    expect(gate.admit(from('10.0.0.1'))).toBe(false);
    expect(gate.refused).toBe(2);
  });

  it('reads no address while fewer connections wait than one source may hold', () => {
    const gate = new PreAuthGate(4);
    const reads = { n: 0 };
    for (let i = 0; i < 100; i++) {
      const s = from('10.0.0.1', reads);
      expect(gate.admit(s)).toBe(true);
      gate.release(s);
    }
    expect(reads.n).toBe(0);
    expect(gate.waiting).toBe(0);
  });

  it('counts every waiting connection once it matters, each address read at most once', () => {
    const gate = new PreAuthGate(2);
    const reads = { n: 0 };
    const x = from('10.0.0.1', reads);
    const y = from('10.0.0.2', reads);
    expect(gate.admit(x)).toBe(true);
    expect(gate.admit(y)).toBe(true);
    expect(reads.n).toBe(0);
    // Two waiting in all: from here each source is counted, the two accepted unread included.
    expect(gate.admit(from('10.0.0.1', reads))).toBe(true);
    expect(gate.admit(from('10.0.0.1', reads))).toBe(false);
    expect(gate.admit(from('10.0.0.2', reads))).toBe(true);
    expect(gate.admit(from('10.0.0.2', reads))).toBe(false);
    expect(reads.n).toBe(6);
    expect(gate.admit(from('10.0.0.3', reads))).toBe(true);
    expect(reads.n).toBe(7);
    // Released twice (admitted, then closed): given back once.
    gate.release(x);
    gate.release(x);
    expect(gate.waiting).toBe(4);
    expect(gate.admit(from('10.0.0.1', reads))).toBe(true);
    expect(gate.admit(from('10.0.0.1', reads))).toBe(false);
  });
});
