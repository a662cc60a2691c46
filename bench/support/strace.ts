// Reads the summary table `strace -c` writes (-o FILE) when it detaches: calls per syscall name.

/** Calls per syscall name of one `strace -c` table (the "total" row left out). */
export function parseStraceSummary(text: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of text.split('\n')) {
    // "% time     seconds  usecs/call     calls    errors syscall" rows; errors may be blank.
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)\s*$/.exec(line);
    if (m && m[2] !== 'total') calls.set(m[2]!, (calls.get(m[2]!) ?? 0) + Number(m[1]));
  }
  return calls;
}
