// The state dir's files that hold tokens (tokens.json, state.json): written whole or not at all, and
// readable by their owner only. writeFileSync's `mode` applies only to a file it creates, so a tokens
// file made 0644 (by hand, a restored backup) stayed 0644; and a plane killed mid-write left a truncated
// file that the next start could not parse. A temp file renamed over the old one fixes both: the rename
// is atomic, and the file that lands is the one created here, with this mode.
import { renameSync, rmSync, writeFileSync } from 'node:fs';

export function writePrivateFile(file: string, text: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  // One left by a plane of this pid that died mid-write (pids are reused): 'wx' would refuse it.
  rmSync(temp, { force: true });
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}
