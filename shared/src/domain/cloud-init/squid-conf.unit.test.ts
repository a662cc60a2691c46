import { describe, expect, it } from 'vitest';
import {
  connectPortsOfSquidConf,
  DEFAULT_BLOCKED_DESTINATIONS,
  DEFAULT_CONNECT_PORTS,
  renderSquidConf,
} from './squid-conf.js';

const conf = renderSquidConf({ port: 3128 });
const lines = conf.split('\n');
const access = lines.filter((l) => l.startsWith('http_access '));

describe('renderSquidConf', () => {
  it('listens on the proxy port only', () => {
    expect(lines.filter((l) => /^(http|https)_port /.test(l))).toEqual(['http_port 3128']);
    for (const off of ['icp_port 0', 'htcp_port 0', 'snmp_port 0', 'pinger_enable off'])
      expect(lines).toContain(off);
  });

  it('authenticates with basic_ncsa_auth against the proxyplane password file', () => {
    expect(lines).toContain(
      'auth_param basic program /usr/lib/squid/basic_ncsa_auth /etc/squid/proxyplane.passwd',
    );
    expect(lines).toContain('acl authenticated proxy_auth REQUIRED');
  });

  it('demands credentials before any other decision, and denies everything it did not allow', () => {
    expect(access).toEqual([
      'http_access deny manager',
      'http_access deny !Safe_ports',
      'http_access deny CONNECT !SSL_ports',
      'http_access deny !authenticated',
      'http_access deny proxyplane_blocked',
      'http_access allow authenticated',
      'http_access deny all',
    ]);
  });

  it('is anonymous toward the target and caches nothing', () => {
    for (const directive of [
      'via off',
      'forwarded_for delete',
      'httpd_suppress_version_string on',
      'cache deny all',
    ]) {
      expect(lines).toContain(directive);
    }
    expect(conf).not.toMatch(/forwarded_for (on|off|transparent|truncate)/);
  });

  it('keeps the metadata server and private ranges out of reach by default', () => {
    const acl = lines.find((l) => l.startsWith('acl proxyplane_blocked dst '));
    expect(acl?.split(' ').slice(3)).toEqual([...DEFAULT_BLOCKED_DESTINATIONS]);
    expect(DEFAULT_BLOCKED_DESTINATIONS).toContain('169.254.0.0/16');
  });

  it('takes CONNECT ports, paths and destination lists as options', () => {
    const custom = renderSquidConf({
      port: 8080,
      passwdFile: '/tmp/x/passwd',
      connectPorts: [443, 8443],
      blockedDestinations: [],
    });
    expect(custom).toContain('acl SSL_ports port 443 8443\n');
    // The same ports in another order, or repeated, are the same configuration: the same bytes.
    expect(
      renderSquidConf({
        port: 8080,
        passwdFile: '/tmp/x/passwd',
        connectPorts: [8443, 443, 8443],
        blockedDestinations: [],
      }),
    ).toBe(custom);
    expect(custom).toContain('/usr/lib/squid/basic_ncsa_auth /tmp/x/passwd\n');
    expect(custom).not.toContain('proxyplane_blocked');
  });

  it('always lets CONNECT reach 443: the probe tunnels to the API there through every VM', () => {
    // Deployed, the EGRESS tier fetches the API's https echo endpoint through the proxy (and BASIC without
    // a URL is a CONNECT to it): a spec that lists only 8443 left the VM refusing both with 403, Unhealthy
    // for good while its own port worked.
    const only8443 = renderSquidConf({ port: 3128, connectPorts: [8443] });
    expect(only8443).toContain('acl SSL_ports port 443 8443\n');
    expect(only8443).toBe(renderSquidConf({ port: 3128, connectPorts: [443, 8443] }));
    expect(connectPortsOfSquidConf(only8443)).toEqual([443, 8443]);
  });

  it.each([
    [{ port: 3128, passwdFile: '/etc/squid/pass word' }],
    [{ port: 3128, passwdFile: 'relative/path' }],
    [{ port: 3128, blockedDestinations: ['300.0.0.0/8'] }],
    [{ port: 3128, blockedDestinations: ['10.0.0.0/33'] }],
    [{ port: 3128, blockedDestinations: ['example.com'] }],
    [{ port: 3128, connectPorts: [] }],
  ])('refuses %j', (options) => {
    expect(() => renderSquidConf(options)).toThrow();
  });
});

describe('connectPortsOfSquidConf', () => {
  it('reads back what renderSquidConf wrote: the default, or the given ports', () => {
    expect(connectPortsOfSquidConf(conf)).toEqual([...DEFAULT_CONNECT_PORTS]);
    expect(connectPortsOfSquidConf(renderSquidConf({ port: 3128, connectPorts: [8443, 443] }))).toEqual([
      443, 8443,
    ]);
  });

  it('adds up repeated acl lines, as squid does', () => {
    expect(connectPortsOfSquidConf('acl SSL_ports port 443\nacl SSL_ports port 8443 443\n')).toEqual([
      443, 8443,
    ]);
  });

  it.each([
    ['no SSL_ports acl', 'http_port 3128\n'],
    ['a range it does not write', 'acl SSL_ports port 1025-65535\n'],
    ['a port out of range', 'acl SSL_ports port 70000\n'],
  ])('is null for %s', (_, text) => {
    expect(connectPortsOfSquidConf(text)).toBeNull();
  });
});
