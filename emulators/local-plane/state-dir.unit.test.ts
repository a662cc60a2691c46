import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claimStateDir, StateDirRefused } from './state-dir.js';

const root = mkdtempSync(join(tmpdir(), 'state-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const defaultDir = join(root, 'checkout', '.local-plane');

describe('claimStateDir', () => {
  it('makes a missing dir, and takes an empty one or one holding only what a plane writes', () => {
    const fresh = join(root, 'fresh', 'nested');
    claimStateDir(fresh, defaultDir);
    expect(existsSync(fresh)).toBe(true);
    const used = join(root, 'used');
    mkdirSync(join(used, 'logs'), { recursive: true });
    mkdirSync(join(used, 'demo-target'));
    for (const f of ['tokens.json', 'state.json', 'state.json.tmp-123']) writeFileSync(join(used, f), '{}');
    expect(() => claimStateDir(used, defaultDir)).not.toThrow();
  });

  // Pointed at $HOME or /tmp, a start deleted that directory's logs/ and replaced its tokens.json.
  it("refuses a directory of the user's, naming what is in it, and changes nothing there", () => {
    const home = join(root, 'home');
    mkdirSync(join(home, 'logs'), { recursive: true });
    writeFileSync(join(home, 'logs', 'mine.log'), 'keep me');
    writeFileSync(join(home, '.bashrc'), '');
    writeFileSync(join(home, 'notes.txt'), '');
    expect(() => claimStateDir(home, defaultDir)).toThrow(StateDirRefused);
    expect(() => claimStateDir(home, defaultDir)).toThrow(/\.bashrc, notes\.txt/);
    expect(readdirSync(join(home, 'logs'))).toEqual(['mine.log']);
  });

  it("always takes the checkout's own .local-plane (other planes' dirs may sit inside it)", () => {
    mkdirSync(join(defaultDir, '1'), { recursive: true });
    expect(() => claimStateDir(defaultDir, defaultDir)).not.toThrow();
  });
});
