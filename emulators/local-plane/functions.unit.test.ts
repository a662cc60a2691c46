import { describe, expect, it } from 'vitest';
import { functionInventory } from './functions.js';

describe('functionInventory', () => {
  const table = {
    functions: {
      reconcile: {
        source: 'functions/reconcile',
        target: 'reconcile',
        topic: 't',
        retry: true,
        timeoutSeconds: 300,
        memory: '512Mi',
      },
      gc: {
        source: 'functions/gc',
        target: 'gcSweep',
        topic: 't',
        retry: false,
        timeoutSeconds: 60,
        memory: '256Mi',
      },
    },
  };

  it('hosts what has a src/index.ts and lists the rest as not built', () => {
    const inv = functionInventory(table, (p) => p.endsWith('functions/gc/src/index.ts'));
    expect(inv.built).toEqual([
      { name: 'gc', source: 'functions/gc', target: 'gcSweep', timeoutSeconds: 60 },
    ]);
    expect(inv.missing).toEqual([
      { name: 'reconcile', entry: expect.stringMatching(/functions\/reconcile\/src\/index\.ts$/) },
    ]);
  });
});
