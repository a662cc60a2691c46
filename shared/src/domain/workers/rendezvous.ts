// Highest-random-weight (rendezvous) hashing: each proxy goes to the live worker with the highest
// hash(worker, proxy). A worker joining or leaving moves only the proxies it wins or held — about 1/n of
// the pool — and every controller replica computes the same answer without coordination.

/** cyrb53: a fast, well-mixed 53-bit string hash (pure; no node:crypto in the domain). */
export function hash53(s: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

export function rendezvousOwner(proxy: string, workers: readonly string[]): string | null {
  let best: string | null = null;
  let bestScore = -1;
  for (const w of workers) {
    const score = hash53(`${w}\u0000${proxy}`);
    if (score > bestScore || (score === bestScore && best !== null && w < best)) {
      best = w;
      bestScore = score;
    }
  }
  return best;
}
