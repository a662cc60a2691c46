import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendLines } from './log-file.js';

describe('the local plane log files', () => {
  it('appends lines, and drops them with one warning once the file cannot be written, never throwing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plane-log-'));
    const file = join(dir, 'compute.log');
    const warnings: string[] = [];
    const append = appendLines(file, (text) => warnings.push(text));
    append('one\n');
    expect(readFileSync(file, 'utf8')).toBe('one\n');
    rmSync(dir, { recursive: true });
    expect(() => {
      append('two\n');
      append('three\n');
    }).not.toThrow();
    expect(warnings).toEqual([`proxyplane: cannot write ${file} (ENOENT): its lines are dropped\n`]);
  });
});
