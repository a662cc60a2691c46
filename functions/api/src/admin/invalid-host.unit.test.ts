// An external proxy's host pasted as a provider's credentials line is refused with a 400 that quotes the
// host back (proxy-admin.ts): whatever separators the line uses, the password goes neither into the answer
// (a CI log prints it) nor into the API's own log.
import { describe, expect, it } from 'vitest';
import { harness } from '../testing/harness.js';

describe('a refused external host is quoted without the password pasted into it', () => {
  it.each([
    ['p.example.com,3128,alice,S3cretPw77', '"p.example.com,…"'],
    ['p.example.com;3128;alice;S3cretPw77', '"p.example.com;…"'],
    ['p.example.com|3128|alice|S3cretPw77', '"p.example.com|…"'],
    ['p.example.com\talice\tS3cretPw77', '"p.example.com\\t…"'],
    ['p.example.com alice S3cretPw77', '"p.example.com …"'],
  ])('POST %j: 400 invalid_host, the secret in neither the body nor a log line', async (host, quoted) => {
    const h = harness();
    const spec = { mode: 'external', endpoint: { host, port: 3128 } };
    const res = await h.call('POST', '/v1/proxies', { name: 'outside', spec });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({
      error: 'invalid_request',
      message: expect.stringContaining(quoted),
      issues: [
        { path: 'spec.endpoint.host', code: 'invalid_host', message: expect.stringContaining(quoted) },
      ],
    });
    expect(text).not.toMatch(/S3cret|alice/);
    expect(h.log.lines.length).toBeGreaterThan(0);
    expect(JSON.stringify(h.log.lines)).not.toMatch(/S3cret|alice/);
    expect(h.store.writeCalls).toEqual([]);
    expect(h.publisher.published).toEqual([]);
  });

  it('user:pass:host:port with a numeric password: the digits are not quoted as a port', async () => {
    const h = harness();
    const spec = { mode: 'external', endpoint: { host: 'alice:12345:p.example.com:3128', port: 3128 } };
    const res = await h.call('POST', '/v1/proxies', { name: 'outside', spec });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({
      issues: [{ code: 'invalid_host', message: expect.any(String) }],
    });
    expect(JSON.parse(text).issues[0].message).toContain('"alice:…"');
    expect(text).not.toMatch(/12345/);
    expect(JSON.stringify(h.log.lines)).not.toMatch(/12345/);
    expect(h.store.writeCalls).toEqual([]);
  });
});
