// proxyplane fleet watch [--interval S] [--once] [--count N]: the fleet page's table in a terminal,
// redrawn in place every interval from GET /fleet/api/state (the same view the page streams). Without a
// terminal, or with --once, it prints the table once per round with no escape codes.
import stringWidth from 'string-width';
import { z } from 'zod';
import {
  FleetRow as ApiFleetRow,
  FleetView as ApiFleetView,
} from '../../functions/api/src/fleet/fleet-schemas.js';
import { none, outputOf, positiveInt } from '../args.js';
import type { Ctx } from '../context.js';
import { ApiCallError, readAnswer, UnreachableError } from '../errors.js';
import { describeFailure } from '../hints.js';
import { age, attrs, ms, table, visible } from '../output.js';

export const watchOptions = {
  interval: { type: 'string' },
  once: { type: 'boolean' },
  count: { type: 'string' },
} as const;

/**
 * The fleet state as this CLI reads it: the API's schema (fleet-schemas.ts, its /openapi.json) with each
 * closed set of words — phase, mode, verdicts, the phases counted — read as any string. A newer API may
 * add a word (a phase 'Draining', a verdict 'DEGRADED'): one row in it failed the whole answer, where the
 * table only prints such words, so it now shows them as sent. Anything else out of shape is still refused.
 * The API's schema stays closed: it is the contract it builds and publishes.
 */
const Word = z.string();
const FleetRow = ApiFleetRow.extend({
  mode: Word,
  phase: Word,
  verdict: Word.nullable(),
  tiers: z.record(z.string(), Word.nullable()),
});
type FleetRow = z.infer<typeof FleetRow>;
const FleetView = ApiFleetView.extend({
  rows: z.array(FleetRow),
  phases: z.record(Word, z.number().int()),
});
export type FleetView = z.infer<typeof FleetView>;

/** Bounds a forgotten watch: one day at one redraw a second. */
const MAX_ROUNDS = 86_400;
/** An hour between rounds is already more than a watch needs, and far below the timers' 24.8-day limit. */
const MAX_INTERVAL_SECONDS = 3_600;

/** The page's gateway cell (page.ts): the owner, `(draining)` while it hands the proxy over, and the
 *  routes whose target check fails through the proxy. */
function gateway(r: FleetRow): string {
  const owner = r.owner ? `${r.owner.owner}${r.owner.drainEpoch !== null ? ' (draining)' : ''}` : '-';
  return r.unreachableRoutes.length ? `${owner} not for ${r.unreachableRoutes.join(', ')}` : owner;
}

function tiers(r: FleetRow): string {
  const b = r.tiers.BASIC ?? '-';
  const e = r.tiers.EGRESS ?? '-';
  return `${b}/${e}`;
}

const HEADER = [
  'NAME',
  'PHASE',
  'BASIC/EGRESS',
  'LATENCY',
  'LEASES',
  'COOLDOWNS',
  'GATEWAY',
  'LOCATION',
  'ATTRIBUTES',
  'CHANGED',
];

/** One proxy's cells, one per HEADER column. */
function rowCells(r: FleetRow, now: Date): string[] {
  return [
    r.name,
    `${r.deleting && r.phase !== 'Deleting' ? `${r.phase}*` : r.phase}${r.cordoned ? ' (cordoned)' : ''}`,
    tiers(r),
    ms(r.latencyMillis),
    `${r.activeLeases}/${r.capacity}${r.leaseStateInvalid ? ' (invalid state)' : ''}`,
    r.cooldowns.length ? String(r.cooldowns.length) : '-',
    gateway(r),
    r.location,
    attrs(r.attributes),
    age(r.changedAt, now),
  ];
}

/** The table of `v` showing `shown`, the cells of its first rows, and how many more there are. */
function tableOf(v: FleetView, shown: string[][]): string {
  const phases = Object.entries(v.phases)
    .map(([p, n]) => `${n} ${p}`)
    .join(', ');
  const lines = [
    `${v.rows.length} proxies${phases ? ` (${phases})` : ''} at ${new Date(v.generatedAt).toLocaleTimeString()}`,
    '',
    table(HEADER, shown),
  ];
  if (shown.length < v.rows.length)
    lines.push(`… ${v.rows.length - shown.length} more (make the terminal taller)`);
  return lines.join('\n');
}

export function fleetTable(v: FleetView, now: Date, maxRows: number): string {
  return tableOf(
    v,
    v.rows.slice(0, Math.max(0, maxRows)).map((r) => rowCells(r, now)),
  );
}

/** What a redraw prints below the table. */
const FOOTER = '\n\n(Ctrl-C to stop)';

/** A terminal's size in character cells. */
export interface Screen {
  rows: number;
  columns: number;
}

/** The terminal a redraw assumes where Io cannot say (the VT100's 24 lines). */
const DEFAULT_ROWS = 24;

/**
 * The screen lines `text` takes on a terminal `columns` wide: one per line, more for one that wraps, its
 * cells counted as terminals show them (string-width: two for wide characters and emoji).
 */
export function screenLines(text: string, columns: number): number {
  const cols = Math.max(1, columns);
  return text.split('\n').reduce((n, line) => n + Math.max(1, Math.ceil(stringWidth(line) / cols)), 0);
}

/**
 * A redraw's frame: the table, with as many rows as leave it shorter than the screen, and the footer.
 * Its lines are counted as the terminal shows them — escaped (run.ts prints through `visible`) and
 * wrapped at its width — and the line after the frame is the cursor's: a frame as tall as the screen
 * scrolled its own first line off.
 */
export function fittedFrame(v: FleetView, now: Date, screen: Screen): string {
  // A frame never shows more rows than the screen has lines: only those are formatted, each once. A
  // frame was remade, every row of the fleet formatted, for each row count tried — at 10,000 proxies
  // a round took 250–600 ms of a 1 s interval.
  const cells = v.rows.slice(0, Math.max(0, screen.rows)).map((r) => rowCells(r, now));
  const frame = (n: number) => `${tableOf(v, cells.slice(0, n))}${FOOTER}`;
  const fits = (n: number) => screenLines(visible(frame(n)), screen.columns) <= screen.rows - 1;
  return frame(mostRowsThatFit(cells.length, fits));
}

/**
 * The most rows, at most `most`, whose frame fits; 0 when none does (the frame then shows no row), as
 * one row at a time from `most` down found it. `most` is tried first, alone: when it is every row, its
 * frame drops the "… N more" line, so it may fit where one row fewer does not. Below every row, a frame
 * with one row more is never shorter (a row takes a line or more and only widens the columns), so the
 * rest is a binary search: a few frames of at most a screenful of rows each.
 */
function mostRowsThatFit(most: number, fits: (n: number) => boolean): number {
  if (most === 0 || fits(most)) return most;
  // fits(lo) is taken as so (0 is shown when nothing fits); the answer is in [lo, hi].
  let lo = 0;
  let hi = most - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

const STATE = '/fleet/api/state';

/**
 * The state JSON, checked against the schema the API publishes for it (fleet-schemas.ts, the one its
 * /openapi.json and view model come from): it was only cast, so an API of another release, or a page
 * answering in its stead, printed `undefined/undefined` cells or failed deep in the table code (a
 * TypeError on `rows.map`) instead of saying what it got. Read with the words a newer API may add let
 * through (FleetView above).
 */
export function readFleetView(body: unknown): FleetView {
  return readAnswer(FleetView, body, `GET ${STATE} is not the fleet state this CLI reads`);
}

/**
 * One round's state, or undefined when Ctrl-C came during it: the request in flight is aborted rather
 * than left to its request timeout, after which the watch reported an unreachable API and exited 1.
 */
async function fetchState(api: Ctx['api'], interrupted: AbortSignal): Promise<unknown> {
  try {
    return await api.call<unknown>('GET', STATE, { role: 'admin', signal: interrupted });
  } catch (err) {
    if (interrupted.aborted) return undefined;
    throw err;
  }
}

/** Failed rounds in a row that end the watch: an outage, not a blip. */
const MAX_FAILED_ROUNDS = 5;

/**
 * A failure the next round may not meet: no answer, or one from the front end or a service in trouble
 * (≥ 500, or 429 when the one short Retry-After wait did not do). A refused credential (401/403), any
 * other 4xx, and an answer that is not the fleet state (bad_response) will not pass by themselves.
 */
const passing = (err: unknown): boolean =>
  err instanceof UnreachableError ||
  (err instanceof ApiCallError && (err.status >= 500 || err.status === 429));

/** The terminal's size this round (it may have been resized since the last). */
const screenOf = (io: Ctx['io']): Screen =>
  io.terminalSize?.() ?? { rows: DEFAULT_ROWS, columns: io.columns };

export async function watchFleet({ api, io, args }: Ctx): Promise<void> {
  none(args.positionals);
  const output = outputOf(args.values, ['table', 'json']);
  const interval = args.values.interval as string | undefined;
  const intervalMs = positiveInt(interval, '--interval', 1, MAX_INTERVAL_SECONDS) * 1000;
  const once = args.values.once === true;
  const count = positiveInt(args.values.count as string | undefined, '--count', MAX_ROUNDS, MAX_ROUNDS);
  const rounds = once ? 1 : count;
  const redraw = io.isTTY && io.clearScreen !== undefined && !once && output === 'table';
  let failedInARow = 0;
  let lastFailure: unknown;
  for (let i = 0; i < rounds && !io.interrupted.aborted; i++) {
    if (i > 0) await io.sleep(intervalMs, io.interrupted);
    if (io.interrupted.aborted) break;
    let raw: unknown;
    try {
      raw = await fetchState(api, io.interrupted);
    } catch (err) {
      // One 502 from the front end, a reset or a 503 ended a day-long watch with exit 1. A passing failure
      // is one line on stderr and the next round tries again; the last round's, or the
      // MAX_FAILED_ROUNDS-th in a row, is the watch's failure (a `--once` that drew nothing is no success).
      failedInARow++;
      lastFailure = err;
      if (!passing(err) || failedInARow >= MAX_FAILED_ROUNDS || i === rounds - 1) throw err;
      const [line] = describeFailure(err).lines;
      io.err(
        `round ${i + 1} failed (${failedInARow} of ${MAX_FAILED_ROUNDS} in a row end the watch), trying again in ${intervalMs / 1000}s: ${line}`,
      );
      continue;
    }
    if (io.interrupted.aborted) break;
    failedInARow = 0;
    const v = readFleetView(raw);
    if (output === 'json') {
      // As the API sent it, once it was found to fit: fields of a newer API are kept, not stripped.
      io.out(JSON.stringify(raw));
      continue;
    }
    if (!redraw) {
      io.out(fleetTable(v, io.now(), Number.MAX_SAFE_INTEGER));
      continue;
    }
    const frame = fittedFrame(v, io.now(), screenOf(io));
    io.clearScreen?.();
    io.out(frame);
  }
  // Ctrl-C while the rounds were failing: the watch ends on that failure, not exit 0 as if it were well.
  if (failedInARow > 0) throw lastFailure;
}
