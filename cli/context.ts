// What every command gets: the API client, where to print, the time, stdin, and its parsed arguments.
import type { Parsed } from './args.js';
import type { CliEnv } from './config.js';
import type { ApiClient } from './http.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** True when stdout is a terminal: `fleet watch` redraws in place only then. */
  isTTY: boolean;
  columns: number;
  readStdin(): Promise<string>;
  readFile(path: string): Promise<string>;
  now(): Date;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Aborted on Ctrl-C. */
  interrupted: AbortSignal;
}

export interface Ctx {
  api: ApiClient;
  io: Io;
  env: CliEnv;
  args: Parsed;
}

export type Command = (ctx: Ctx) => Promise<void>;
