// Reads the docs as a reader sees them: which lines are prose and which are fenced code, the inline code
// spans and links of the prose, and the headings a `#anchor` can point at (GitHub's slugs).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Line {
  /** 1-based, as an editor shows it. */
  n: number;
  text: string;
  /** Inside a ``` or ~~~ fence. */
  fenced: boolean;
}

export interface Doc {
  /** Repository-relative, with forward slashes. */
  path: string;
  lines: Line[];
}

/** The docs set: README.md, docs/*.md, emulators/<name>/README.md and terraform/README.md. */
export function docPaths(repoRoot: string): string[] {
  const docs = readdirSync(join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  const emulators = readdirSync(join(repoRoot, 'emulators'))
    .map((d) => `emulators/${d}/README.md`)
    .filter((f) => existsSync(join(repoRoot, f)));
  const terraform = existsSync(join(repoRoot, 'terraform/README.md')) ? ['terraform/README.md'] : [];
  return ['README.md', ...docs, ...emulators, ...terraform].sort();
}

export function readDoc(repoRoot: string, path: string): Doc {
  const lines: Line[] = [];
  let fence: string | null = null;
  readFileSync(join(repoRoot, path), 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
      if (marker && (fence === null || marker.startsWith(fence))) {
        fence = fence === null ? marker : null;
        lines.push({ n: i + 1, text, fenced: true });
        return;
      }
      lines.push({ n: i + 1, text, fenced: fence !== null });
    });
  return { path, lines };
}

/** The contents of the inline code spans of a prose line (single backticks; fences excluded). */
export function codeSpans(line: Line): string[] {
  if (line.fenced) return [];
  return [...line.text.matchAll(/(?<!`)`([^`\n]+)`(?!`)/g)].map((m) => m[1]!.trim());
}

/** A prose line without its code spans, so a link written inside backticks is not a link. */
function withoutCode(text: string): string {
  return text.replace(/`[^`\n]*`/g, '``');
}

/** The targets of the inline links and images of a prose line: `[x](target "title")`. */
export function linkTargets(line: Line): string[] {
  if (line.fenced) return [];
  return [...withoutCode(line.text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1]!,
  );
}

/** GitHub's anchor for a heading's text (github-slugger: lowercase, punctuation dropped, spaces → -). */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a doc's headings make, with GitHub's -1, -2 … for repeated slugs. */
export function anchors(doc: Doc): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of doc.lines) {
    if (line.fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line.text)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  // Explicit HTML anchors.
  for (const line of doc.lines)
    for (const m of line.text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

/**
 * The sections a `§ Name` reference can mean, as written: the headings, and the bold run-in heads that
 * open a paragraph (`**Cost.** One request per …`), which the docs use as sub-sections.
 */
export function sections(doc: Doc): string[] {
  return doc.lines
    .filter((l) => !l.fenced)
    .map((l) => /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(l.text)?.[1] ?? /^\*\*([^*]+?)\*\*/.exec(l.text)?.[1])
    .filter((h): h is string => h !== undefined);
}
