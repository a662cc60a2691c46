// Plain-text output: aligned tables (no borders, as kubectl prints them), short ages, YAML documents.
import { stringify } from 'yaml';

/** Columns padded to their widest cell; the last column is not padded. Cells never contain newlines. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows].map((r) => r.map((c) => c.replace(/[\r\n\t]+/g, ' ')));
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
