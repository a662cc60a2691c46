// /openapi.json tells clients about conditional requests (docs/api.md "Conditional requests"): the If-Match
// header parameter and the 412 answer on the writes of one proxy, and the ETag header on every answer
// whose body is one proxy.
import { describe, expect, it } from 'vitest';
import { proxyTag } from '../admin/if-match.js';
import { harness } from '../testing/harness.js';

interface Operation {
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  responses: Record<string, { headers?: Record<string, unknown> }>;
}

async function operations() {
  const res = await harness().call('GET', '/openapi.json');
  expect(res.status).toBe(200);
  const doc = (await res.json()) as { paths: Record<string, Record<string, Operation>> };
  const op = (path: string, method: string) => doc.paths[path]?.[method] as Operation;
  return {
    create: op('/v1/proxies', 'post'),
    list: op('/v1/proxies', 'get'),
    get: op('/v1/proxies/{name}', 'get'),
    put: op('/v1/proxies/{name}/spec', 'put'),
    patch: op('/v1/proxies/{name}/spec', 'patch'),
    delete: op('/v1/proxies/{name}', 'delete'),
  };
}

const ifMatch = (op: Operation) => op.parameters?.find((p) => p.in === 'header' && p.name === 'If-Match');

describe('/openapi.json: conditional requests', () => {
  it('declares an optional If-Match and a 412 on PUT and PATCH …/spec and DELETE, and on nothing else', async () => {
    const ops = await operations();
    for (const op of [ops.put, ops.patch, ops.delete]) {
      expect(ifMatch(op)).toMatchObject({ required: false });
      expect(op.responses['412']).toBeDefined();
    }
    for (const op of [ops.create, ops.list, ops.get]) {
      expect(ifMatch(op)).toBeUndefined();
      expect(op.responses['412']).toBeUndefined();
    }
  });

  // A DELETE re-reads when a write lands between its read and its write (always with If-Match, whose
  // deletion write is conditioned on that read): after 5 attempts it answers 409 conflict, as PUT/PATCH do.
  it('declares 409 on DELETE as on PUT and PATCH …/spec', async () => {
    const ops = await operations();
    for (const op of [ops.put, ops.patch, ops.delete]) expect(op.responses['409']).toBeDefined();
  });

  it('declares the ETag header on every answer whose body is one proxy, not on the list', async () => {
    const ops = await operations();
    const etagOf = (op: Operation, status: string) => op.responses[status]?.headers?.ETag;
    expect(etagOf(ops.create, '201')).toBeDefined();
    expect(etagOf(ops.get, '200')).toBeDefined();
    expect(etagOf(ops.put, '200')).toBeDefined();
    expect(etagOf(ops.patch, '200')).toBeDefined();
    expect(etagOf(ops.delete, '202')).toBeDefined();
    expect(etagOf(ops.list, '200')).toBeUndefined();
  });

  it('describes the ETag as the API sends it: its example is a tag of the form proxyTag makes', async () => {
    // A client generated from /openapi.json that built `"<generation>"` got 412 on every write.
    const ops = await operations();
    const etag = ops.get.responses['200']?.headers?.ETag as {
      description: string;
      schema: { example: string };
    };
    const [generation, uid] = JSON.parse(etag.schema.example).split('.');
    expect(etag.schema.example).toBe(`"${proxyTag({ generation: Number(generation), uid })}"`);
    expect(uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(etag.description).toContain('"<generation>.<uid>"');
  });
});
