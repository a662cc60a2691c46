import { describe, expect, it } from 'vitest';
import type { HostedFunction, HostFunctionOptions } from '../functions-host/host.js';
import { functionInventory, hostFunctions } from './functions.js';

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

describe('hostFunctions', () => {
  /** Starts every function but `failing`; a stopped one exits, as a real child does. */
  const starter = (failing: string, stopped: string[]) => async (o: HostFunctionOptions) => {
    if (o.fn.name === failing) throw new Error(`function ${failing} exited before it was ready`);
    let exit!: () => void;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      exit = () => resolve({ code: null, signal: 'SIGTERM' });
    });
    return {
      name: o.fn.name,
      url: `http://127.0.0.1:${o.port}`,
      port: o.port,
      pid: 1,
      exited,
      stop: async () => {
        stopped.push(o.fn.name);
        exit();
      },
    } satisfies HostedFunction;
  };
  const fns = ['probe', 'gc', 'reconcile'].map((name) => ({
    name,
    source: `functions/${name}`,
    target: name,
  }));
  const opts = { portFor: () => 1, host: '127.0.0.1', env: {}, logDir: '/tmp' };

  it('when one fails, stops the others without calling them up (npm start would report them exited)', async () => {
    const stopped: string[] = [];
    const up: string[] = [];
    await expect(
      hostFunctions(fns, { ...opts, start: starter('gc', stopped), onUp: (fn) => up.push(fn.name) }),
    ).rejects.toThrow('function gc exited before it was ready');
    expect(stopped.sort()).toEqual(['probe', 'reconcile']);
    expect(up).toEqual([]);
  });

  it('calls each up once all are', async () => {
    const up: string[] = [];
    const hosted = await hostFunctions(fns, {
      ...opts,
      start: starter('none', []),
      onUp: (fn) => up.push(fn.name),
    });
    expect(up).toEqual(['probe', 'gc', 'reconcile']);
    expect(hosted.map((f) => f.name)).toEqual(up);
  });
});
