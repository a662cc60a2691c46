// The launchers' (npm start, npm run emulators) stop triggers. `on`, not `once`: a second Ctrl-C (or npm
// forwarding the one the terminal sent) must not fall back to Node's default, which would exit at once
// and orphan the detached emulators; and whatever else goes wrong, they go with this process.
export function onShutdown(shutdown: (why: string, exitCode: number) => void): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => shutdown(signal, 0));
  }
  process.on('uncaughtException', (err) => {
    console.error(err);
    shutdown('uncaught exception', 1);
  });
  process.on('unhandledRejection', (err) => {
    console.error(err);
    shutdown('unhandled rejection', 1);
  });
}
