import { describe, expect, it } from 'vitest';
import { applyGcMarking } from './gc-marking.js';

describe('gc marking', () => {
  it('turns incremental marking off for "atomic" and on for "incremental"', () => {
    const set: string[] = [];
    applyGcMarking('atomic', (f) => set.push(f));
    applyGcMarking('incremental', (f) => set.push(f));
    expect(set).toEqual(['--no-incremental-marking', '--incremental-marking']);
  });
});
