// The plane's own log files (.local-plane/logs): best effort. The emulators and the scheduler log from
// timers and socket handlers inside the plane's process, where a throw is an uncaught exception — and an
// uncaught exception stops the whole plane (launcher/shutdown-signals.ts), its in-memory Firestore-backed
// state, secrets and VMs with it. A disk that filled up or a log dir removed under a running plane
// (`git clean -fdX`) costs the lines, said once per file on stderr, never the plane.
import { appendFileSync } from 'node:fs';

export function appendLines(
  file: string,
  warn: (text: string) => void = (text) => process.stderr.write(text),
): (line: string) => void {
  let dropped = 0;
  return (line) => {
    try {
      appendFileSync(file, line);
    } catch (err) {
      if (dropped++ === 0)
        warn(
          `proxyplane: cannot write ${file} (${(err as NodeJS.ErrnoException).code ?? err}): its lines are dropped\n`,
        );
    }
  };
}
