// What every command gets: the API client, where to print, the time, stdin, and its parsed arguments.
import type { Parsed } from './args.js';
import type { CliEnv } from './config.js';
import type { ApiClient } from './http.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /**
   * Moves the cursor home and clears the terminal (`fleet watch`'s redraw): the one control sequence the
   * CLI sends on purpose, apart from what it prints, whose control characters are shown escaped (run.ts).
   * Absent where stdout is no terminal (a test's Io): the watch then prints one table per round.
   */
  clearScreen?(): void;
  /** True when stdout is a terminal: `fleet watch` redraws in place only then. */
  isTTY: boolean;
  /** The terminal's width when the command started (120 where stdout is no terminal). */
  columns: number;
  /**
   * The terminal's size now: read each round, as a watch outlives a resize. Absent where stdout is no
   * terminal (a test's Io): a redraw then takes a 24-line terminal `columns` wide.
   */
  terminalSize?(): { rows: number; columns: number };
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
