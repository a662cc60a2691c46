import { describe, expect, it } from 'vitest';
import { InputError } from './errors.js';
import { parseProxyFile } from './proxy-file.js';

const managed =
  'name: edge-1\nspec:\n  mode: managed\n  zone: us-central1-a\n  credentialsRef: {secret: proxy-creds}\n';

function problems(text: string): string[] {
  try {
    parseProxyFile(text, 'p.yaml');
  } catch (err) {
    if (err instanceof InputError) return [err.message, ...err.details];
    throw err;
  }
  throw new Error('expected an InputError');
}

describe('parseProxyFile', () => {
  it.each([
    ['one YAML proxy', managed, ['edge-1']],
    ['JSON', '{"name":"x-1","spec":{"mode":"external","endpoint":{"host":"h","port":3128}}}', ['x-1']],
    [
      'an external SOCKS5 proxy',
      'name: res-1\nspec: {mode: external, endpoint: {host: r.example, port: 1080, protocol: socks5}}\n',
      ['res-1'],
    ],
    [
      'a YAML list',
      `- ${managed.replace(/\n/g, '\n  ').trimEnd()}\n- name: edge-2\n  spec: {mode: managed, zone: us-east1-b, credentialsRef: {secret: c}}\n`,
      ['edge-1', 'edge-2'],
    ],
    [
      'several documents',
      `${managed}---\nname: edge-3\nspec: {mode: managed, zone: us-east1-b, credentialsRef: {secret: c}}\n`,
      ['edge-1', 'edge-3'],
    ],
  ])('reads %s', (_, text, names) => {
    expect(parseProxyFile(text, 'p.yaml').map((p) => p.name)).toEqual(names);
  });

  it('says what to keep of a file saved from `proxies get`: name and spec, not the fields the plane sets', () => {
    const got = `${managed}uid: 5b0c7a0e-0c3f-4b7e-9d0f-2f7b1c1d8e11\ngeneration: 3\nstatus: {phase: Ready}\n`;
    expect(problems(got)[1]).toBe(
      "p.yaml: (top level): unknown field(s) uid, generation, status (uid, generation, status: set by the plane, as `proxies get` shows them; a file holds only name and spec, e.g. `proxies get NAME -o json | jq '{name, spec}'`)",
    );
    // Only at the top: a spec's unknown field is a mistake of the spec.
    expect(problems(`${managed}  status: x\n`)[1]).toBe('p.yaml: spec: unknown field(s) status');
  });

  it('keeps the body as written: the API applies the defaults', () => {
    expect(parseProxyFile(managed, 'p.yaml')[0]!.body).toEqual({
      name: 'edge-1',
      spec: { mode: 'managed', zone: 'us-central1-a', credentialsRef: { secret: 'proxy-creds' } },
    });
  });

  it.each([
    ['not YAML', 'name: [unclosed', /not valid YAML or JSON: line 1/],
    ['empty', '', /holds no proxy/],
    ['a bad name', managed.replace('edge-1', 'Edge_1'), /name: must be a DNS label/],
    ['a bad zone', managed.replace('us-central1-a', 'moon'), /spec\.zone: a GCE zone/],
    ['an unknown field', `${managed}  colour: red\n`, /spec: unknown field\(s\) colour/],
    ['status set by hand', `${managed}status: {phase: Ready}\n`, /unknown field\(s\) status/],
    ['a duplicate name', `${managed}---\n${managed}`, /"edge-1" appears twice/],
    ['a duplicate key', `${managed}name: again\n`, /not valid YAML or JSON/],
    ['an alias bomb', 'a: &a [x, x]\nb: [*a, *a]\n', /not valid YAML or JSON|Excessive alias/],
    // The API's refusals that need only the spec: caught before anything is sent (the other proxies of
    // the file would otherwise be created before the API refuses this one).
    [
      'a managed proxy that could never boot',
      managed.replace('  credentialsRef: {secret: proxy-creds}\n', ''),
      /spec\.credentialsRef: required for a managed proxy without spec\.cloudInit/,
    ],
    [
      'a managed proxy asking for SOCKS5',
      `${managed}  protocol: socks5\n`,
      /spec\.protocol: a managed proxy speaks http only, not socks5/,
    ],
    [
      'an endpoint of an unknown protocol',
      'name: x-1\nspec: {mode: external, endpoint: {host: h, port: 1080, protocol: socks4}}\n',
      /spec\.endpoint\.protocol: /,
    ],
    [
      'an endpoint host with credentials in it, without showing them',
      'name: x-1\nspec: {mode: external, endpoint: {host: "alice:s3cret@h.example", port: 3128}}\n',
      /spec\.endpoint\.host: not a DNS name or an IP address: …@h\.example$/m,
    ],
    [
      'an endpoint host with a port in it',
      'name: x-1\nspec: {mode: external, endpoint: {host: "h.example:3128", port: 3128}}\n',
      /spec\.endpoint\.host: not a DNS name or an IP address: h\.example:3128/,
    ],
    [
      'a health-check URL with credentials in it, without showing them',
      `${managed}  healthCheck: {url: "http://alice:s3cret@target.example/"}\n`,
      /spec\.healthCheck\.url: must not carry credentials \(user:password@\)$/m,
    ],
  ])('refuses %s, saying where', (_, text, pattern) => {
    expect(problems(text).join('\n')).toMatch(pattern);
  });

  it('never repeats the password of an endpoint host that carries one', () => {
    const text =
      'name: x-1\nspec: {mode: external, endpoint: {host: "alice:s3cret@h.example", port: 3128}}\n';
    expect(problems(text).join('\n')).not.toMatch(/s3cret|alice/);
  });

  it('never repeats the password of a health-check URL that carries one', () => {
    const text = `${managed}  healthCheck: {url: "http://alice:s3cret@target.example/"}\n`;
    expect(problems(text).join('\n')).not.toMatch(/s3cret|alice/);
  });

  it('names the document of a multi-document file that is wrong', () => {
    const text = `${managed}---\nname: ok-2\nspec: {mode: managed}\n`;
    expect(problems(text)).toContain(
      'p.yaml document 2: spec.zone: Invalid input: expected string, received undefined',
    );
  });
});
