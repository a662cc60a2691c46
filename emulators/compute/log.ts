// The emulator's log sink: one call per event, Cloud Logging severities; main.ts prints JSON lines.
export type Severity = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';
export type EmulatorLog = (severity: Severity, message: string, fields?: Record<string, unknown>) => void;

export const silentLog: EmulatorLog = () => {};

export const jsonLineLog =
  (component: string, write: (line: string) => void = (l) => process.stdout.write(l)): EmulatorLog =>
  (severity, message, fields) =>
    write(`${JSON.stringify({ severity, message, component, time: new Date().toISOString(), ...fields })}\n`);
