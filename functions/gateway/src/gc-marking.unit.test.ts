import { describe, expect, it } from 'vitest';
import { applyGcMarking, gcMarkingFor } from './gc-marking.js';

describe('gc marking', () => {
  it('turns incremental marking off for "atomic" and on for "incremental"', () => {
    const set: string[] = [];
    applyGcMarking('atomic', (f) => set.push(f));
    applyGcMarking('incremental', (f) => set.push(f));
    expect(set).toEqual(['--no-incremental-marking', '--incremental-marking']);
  });

  it('"auto" is atomic with the proxy listener on and incremental with only the fetch endpoint', () => {
    expect(gcMarkingFor('auto', true)).toBe('atomic');
    expect(gcMarkingFor('auto', false)).toBe('incremental');
    expect(gcMarkingFor('atomic', false)).toBe('atomic');
    expect(gcMarkingFor('incremental', true)).toBe('incremental');
  });
});
