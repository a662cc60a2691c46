// Records the process's unhandled rejections while a test runs — vitest reports them too, but against
// whichever file a worker runs when they land; recorded, the test that caused one fails itself.

export interface RejectionRecorder {
  readonly reasons: unknown[];
  stop(): void;
}

export function recordUnhandledRejections(): RejectionRecorder {
  const reasons: unknown[] = [];
  const record = (reason: unknown) => reasons.push(reason);
  process.on('unhandledRejection', record);
  return { reasons, stop: () => process.off('unhandledRejection', record) };
}
