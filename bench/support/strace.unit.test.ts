import { describe, expect, it } from 'vitest';
import { parseStraceSummary } from './strace.js';

// The table strace 6 wrote for the gateway under CONNECT load (bench/gateway-syscalls.ts): rows with and
// without an errors column, a futex row with a large usecs/call, the total row.
const TABLE = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 86.53    2.774251       21340       130        16 futex
  3.20    0.102447          10      9447           write
  1.99    0.063718           4     14167           read
  1.85    0.059309           4     14456      2507 epoll_ctl
  1.82    0.058308          12      4720           shutdown
  1.47    0.046971          19      2361      2361 connect
  0.94    0.030216           6      4720           close
  0.59    0.018963           4      4722           setsockopt
  0.50    0.016056           6      2361           socket
  0.45    0.014306           6      2361           accept4
  0.38    0.012267           5      2438           epoll_pwait
  0.29    0.009355           3      2361           getsockopt
  0.00    0.000022           7         3           getpid
------ ----------- ----------- --------- --------- ----------------
100.00    3.206189          49     64247      4884 total
`;

describe('parseStraceSummary', () => {
  it('reads every row, with or without errors, and leaves the total out', () => {
    const calls = parseStraceSummary(TABLE);
    expect(calls.get('write')).toBe(9447);
    expect(calls.get('epoll_ctl')).toBe(14456);
    expect(calls.get('connect')).toBe(2361);
    expect(calls.get('futex')).toBe(130);
    expect(calls.has('total')).toBe(false);
    expect([...calls.values()].reduce((a, b) => a + b, 0)).toBe(64247);
  });

  it('reads nothing from text that is not a summary', () => {
    expect(parseStraceSummary('strace: Process 42 attached\nstrace: Process 42 detached\n').size).toBe(0);
  });
});
