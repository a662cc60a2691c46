import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { GCE_SERVICES, pruneComputeProtos, reachableV1Names } from './compute-protos.js';

// The package's file, read fresh (not through require's cache, which the provider prunes in place).
const installed = () =>
  JSON.parse(
    readFileSync(
      createRequire(import.meta.url).resolve('@google-cloud/compute/build/protos/protos.json'),
      'utf8',
    ),
  );

describe('pruneComputeProtos', () => {
  it('keeps what the two services reach, and every method resolves to the same fields as in the full set', () => {
    // v1 alone as the reference: v1beta and v1small are never read, and would double the cost.
    const whole = installed();
    const compute = whole.nested.google.nested.cloud.nested.compute;
    compute.nested = { v1: compute.nested.v1 };
    const full = protobuf.Root.fromJSON(whole);
    const root = protobuf.Root.fromJSON(pruneComputeProtos(installed()));
    // Nothing the kept services name is missing: resolveAll throws on any unresolvable type.
    root.resolveAll();
    const fieldsOf = (t: protobuf.Type, depth = 0): unknown =>
      depth > 3
        ? t.fullName
        : Object.fromEntries(
            t.fieldsArray.map((f) => [
              f.name,
              f.resolvedType instanceof protobuf.Type ? fieldsOf(f.resolvedType, depth + 1) : f.type,
            ]),
          );
    for (const name of GCE_SERVICES) {
      const kept = root.lookupService(`google.cloud.compute.v1.${name}`);
      const all = full.lookupService(`google.cloud.compute.v1.${name}`);
      expect(Object.keys(kept.methods)).toEqual(Object.keys(all.methods));
      for (const m of kept.methodsArray) {
        m.resolve();
        const w = all.methods[m.name]!;
        w.resolve();
        expect(fieldsOf(m.resolvedRequestType!)).toEqual(fieldsOf(w.resolvedRequestType!));
        expect(fieldsOf(m.resolvedResponseType!)).toEqual(fieldsOf(w.resolvedResponseType!));
        expect(m.options).toEqual(w.options);
      }
    }
  }, 30_000);

  it('drops most of the file: v1beta, v1small and the messages of services never called', () => {
    const json = pruneComputeProtos(installed());
    const compute = json.nested.google.nested.cloud.nested.compute.nested;
    expect(Object.keys(compute)).toEqual(['v1']);
    const kept = Object.keys(compute.v1.nested);
    expect(kept).toEqual(expect.arrayContaining(['Instances', 'ZoneOperations', 'Instance', 'Operation']));
    expect(kept).not.toContain('Disks');
    expect(kept).not.toContain('Snapshot');
    expect(kept.length).toBeLessThan(
      Object.keys(installed().nested.google.nested.cloud.nested.compute.nested.v1.nested).length / 5,
    );
    expect(JSON.stringify(json).length).toBeLessThan(2_000_000);
    // Other namespaces stay whole: annotations the clients read (google.api.http) live there.
    expect(Object.keys(json.nested.google.nested)).toEqual(['cloud', 'api', 'protobuf']);
  });

  it('is idempotent: pruning what was pruned changes nothing', () => {
    const once = JSON.stringify(pruneComputeProtos(installed()));
    // A copy, not the same object: the same one is skipped outright.
    expect(JSON.stringify(pruneComputeProtos(JSON.parse(once)))).toBe(once);
  });

  it('refuses a service that names a type v1 does not have, rather than leave a client unable to encode it', () => {
    const v1 = {
      S: { methods: { Get: { requestType: 'Req', responseType: 'Missing' } } },
      Req: { fields: { a: { type: 'string' } } },
    };
    expect(() => reachableV1Names(v1, ['S'])).toThrow(/S\.Get names Missing/);
  });

  it('follows nested types, fully qualified names and enums, and stops at other packages', () => {
    const v1 = {
      S: { methods: { Get: { requestType: '.google.cloud.compute.v1.Req', responseType: 'Res' } } },
      Req: { fields: { any: { type: 'google.protobuf.Any' }, kind: { type: 'Kind' } } },
      Res: { fields: { inner: { type: 'Inner' } }, nested: { Inner: { fields: { e: { type: 'E' } } } } },
      E: { values: { A: 0 } },
      Kind: { values: { X: 0 } },
      Unused: { fields: {} },
    };
    expect([...reachableV1Names(v1, ['S'])].sort()).toEqual(['E', 'Kind', 'Req', 'Res', 'S']);
  });
});
