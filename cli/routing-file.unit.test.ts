// `routing apply -f FILE` refuses, before anything is sent (exit 2), a host the API refuses: one no request
// can have (shared/src/messages/gateway-snapshot.ts refuseUnmatchableHosts, the rule the admin PUT applies).
// The stored schema takes them, so they passed the file check, and the API stored them with a 200.
import { describe, expect, it } from 'vitest';
import { InputError } from './errors.js';
import { parseRoutingFile } from './routing-file.js';

const file = (hosts: string[]) =>
  JSON.stringify({
    routes: [{ name: 'r', match: { hosts: ['shop.example', ...hosts] }, policy: 'least-active' }],
  });

describe('parseRoutingFile: hosts', () => {
  it.each(['10.0.0.1:8080', '.', ':::', '*.0.0.1', '1.2.3.4:443'])(
    'refuses %j at its path (exit 2)',
    (host) => {
      let thrown: unknown;
      try {
        parseRoutingFile(file([host]), 'r.yaml');
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(InputError);
      expect((thrown as InputError).exitCode).toBe(2);
      expect((thrown as InputError).details).toEqual([
        expect.stringMatching(/^routes\.0\.match\.hosts\.1: matches no request host/),
      ]);
    },
  );

  it('takes the hosts a request can have, as the API does', () => {
    const hosts = ['*', 'Shop.Example', '*.example.com', '10.0.0.1', '2001:db8::1', '[2001:db8::1]'];
    expect(parseRoutingFile(file(hosts), 'r.yaml').routes[0]?.match.hosts).toEqual([
      'shop.example',
      '*',
      'shop.example',
      '*.example.com',
      '10.0.0.1',
      '2001:db8::1',
      '2001:db8::1',
    ]);
  });
});
