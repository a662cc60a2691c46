// The launchers' (npm start, npm run emulators) stop triggers. `on`, not `once`: a second Ctrl-C (or npm
// forwarding the one the terminal sent) must not fall back to Node's default, which would exit at once
// and orphan the detached emulators; and whatever else goes wrong, they go with this process.
/** How often the launcher looks whether whoever started it is still there. */
const PARENT_CHECK_MS = 1_000;

export function onShutdown(shutdown: (why: string, exitCode: number) => void): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => shutdown(signal, 0));
  }
  // The reader of our output gone (whoever started us closed its end of the pipe): every write fails,
  // and each failure, unhandled, went to uncaughtException, whose own report failed the same way — a loop
  // at 100 % CPU that never stopped the plane. Nothing more can be shown, and whoever started us is gone:
  // stop writing, and stop.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', () => {
      silenceConsole();
      shutdown('output closed', 1);
    });
  }
  // Whoever started us killed outright (`kill -9` of npm, an IDE's forced stop): no signal comes, we are
  // handed to another parent, and the plane went on running on its ports with nobody to Ctrl-C it — the
  // next `npm start` refused every port. Checked each second: the new parent means the old one is gone.
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch); // once: the stop that follows takes seconds
    shutdown('parent gone', 1);
  }, PARENT_CHECK_MS).unref();
  process.on('uncaughtException', (err) => {
    console.error(err);
    shutdown('uncaught exception', 1);
  });
  process.on('unhandledRejection', (err) => {
    console.error(err);
    shutdown('unhandled rejection', 1);
  });
}

function silenceConsole(): void {
  const quiet = () => {};
  console.log = quiet;
  console.info = quiet;
  console.warn = quiet;
  console.error = quiet;
}
