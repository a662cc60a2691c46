// Keeps glibc's malloc from handing the top of its heap back to the kernel after every V8 GC during a
// long tunnel. Each socket read is a fresh 64 KiB ArrayBuffer (libuv's read size) that is only freed
// when V8 collects it: at ~600 MiB/s some 30 MB of them are freed together at each GC, coalesce at the
// top of the brk heap and — being more than M_TRIM_THRESHOLD (128 KiB by default) — are trimmed; the
// next 30 MB of reads then fault in freshly zeroed pages. Measured on bench/gateway.ts tput with 1,000 MiB
// transfers: 350k minor faults per 3 GB against 28k without trimming, and twice the kernel CPU per byte
// of the bare Node pipe (docs/gateway.md § Performance). Whether a given process trims depends on the
// layout of its heap, so the bare pipe is sometimes spared by luck; this makes it deliberate.
//
// Node has no mallopt(), but mallopt(3) documents the dynamic thresholds: when a block allocated with
// mmap is freed, M_MMAP_THRESHOLD rises to its size and M_TRIM_THRESHOLD to twice that, up to
// DEFAULT_MMAP_THRESHOLD_MAX (32 MiB on 64-bit). Dropping one block just under that maximum sets the trim
// threshold to ~62 MiB, about the external memory V8 lets build up between GCs (its 64 MB soft limit).
// The cost is that up to that much freed memory stays mapped. Other allocators (musl) ignore it harmlessly.

/** Just under glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit, whose chunk header must fit too. */
export const MALLOC_PRIME_BYTES = 31 * 1024 * 1024;

/**
 * Allocates and drops one mmap-sized block; glibc sees the free at V8's next GC. Runs when this module is
 * evaluated: main.ts imports it first, so the GCs of loading the rest free it before any tunnel runs.
 */
export function raiseMallocTrimThreshold(bytes = MALLOC_PRIME_BYTES): void {
  // allocUnsafeSlow: its own malloc() (not the Buffer pool); writing one byte is all the block needs.
  Buffer.allocUnsafeSlow(bytes)[0] = 0;
}

raiseMallocTrimThreshold();
