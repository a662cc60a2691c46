// Plain-text output: aligned tables (no borders, as kubectl prints them), short ages, YAML documents.
import { stringify } from 'yaml';

/**
 * C0 controls but the tab and the line feed (the output's own layout), DEL, and C1 controls: what a
 * terminal may act on instead of showing. An attribute value is any string, so an admin's
 * "demo\u001b[2J\u001b]0;…\u0007" cleared the screen and retitled the terminal of whoever listed the proxies.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Text as a terminal should show it: each control character (CONTROL) spelled as its \u escape. */
export const visible = (text: string) => text.replace(CONTROL, escaped);

/**
 * Columns padded to their widest cell; the last column is not padded. Cells never contain newlines, and
 * their control characters are escaped before the widths are measured, so the columns still line up.
 */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows].map((r) => r.map((c) => visible(c.replace(/[\r\n\t]+/g, ' '))));
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** 42s, 5m, 3h, 2d: how long ago `then` was (or until, when in the future). */
export function age(then: string | Date | null | undefined, now: Date): string {
  if (!then) return '-';
  const t = typeof then === 'string' ? Date.parse(then) : then.getTime();
  if (!Number.isFinite(t)) return '-';
  const s = Math.abs(now.getTime() - t) / 1000;
  if (s < 90) return `${Math.round(s)}s`;
  if (s < 90 * 60) return `${Math.round(s / 60)}m`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

export function attrs(m: Record<string, string> | undefined): string {
  const entries = Object.entries(m ?? {});
  return entries.length === 0 ? '-' : entries.map(([k, v]) => `${k}=${v}`).join(',');
}

export const ms = (v: number | null | undefined) => (typeof v === 'number' ? `${Math.round(v)}ms` : '-');

export const json = (v: unknown) => JSON.stringify(v, null, 2);
export const yaml = (v: unknown) => stringify(v, { lineWidth: 0 }).trimEnd();

/** A value as a shell word: what `eval "$(proxyplane … -o env)"` reads back unchanged. */
export function shellQuote(v: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]*$/.test(v) && v !== '' ? v : `'${v.replace(/'/g, `'\\''`)}'`;
}
