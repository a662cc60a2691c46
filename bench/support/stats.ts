// Small measuring helpers shared by the benches.
import { readFileSync } from 'node:fs';

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** The middle value (the mean of the two middle ones for an even count); null for none. */
export function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** utime + stime of a process, every thread, in seconds (Linux /proc); NaN where that cannot be read. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // a process name may contain ')'
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND; // utime, stime: stat(5) 14, 15
  } catch {
    return Number.NaN;
  }
}
