import { describe, expect, it } from 'vitest';
import { echoSeesForwardingHeaders, logEgressScope } from './echo-scope.js';

describe('what EGRESS can see through its echo URL', () => {
  it.each<[string, boolean]>([
    ['http://echo.example.net/v1/echo', true],
    ['http://127.0.0.1:18300/v1/echo', true],
    ['https://proxyplane-api-1.europe-west4.run.app/v1/echo', false],
  ])('%s: forwarding headers seen %s', (url, seen) => {
    expect(echoSeesForwardingHeaders(url)).toBe(seen);
  });

  it.each<[string, string | null, Array<Record<string, unknown>>]>([
    [
      'an https echo: header checks off, said once at INFO with the echo’s origin',
      'https://api.example/v1/echo?x=1',
      [{ event: 'probe.header_checks_off', echoOrigin: 'https://api.example' }],
    ],
    ['an http echo: nothing to say', 'http://echo.example/v1/echo', []],
    ['no echo (no EGRESS): nothing to say', null, []],
  ])('%s', (_name, url, lines) => {
    const logged: Array<Record<string, unknown>> = [];
    logEgressScope(url, { info: (_m, fields) => logged.push(fields) });
    expect(logged).toEqual(lines);
  });
});
