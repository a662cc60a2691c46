// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are bash, where ${…} is expansion syntax
import { describe, expect, it } from 'vitest';
import { renderSquidConf } from './squid-conf.js';
import { connectPortsOfStartupScript, PASSWD_FILE, renderDefaultCloudInit } from './startup-script.js';

const base = { port: 3128, credentialsSecret: 'projects/demo/secrets/proxy-creds' };
const script = renderDefaultCloudInit(base);
const lines = script.split('\n');

describe('renderDefaultCloudInit', () => {
  it('is a bash script that stops at the first error', () => {
    expect(lines[0]).toBe('#!/bin/bash');
    expect(script).toContain('set -Eeuo pipefail');
    expect(script).toContain('trap on_error ERR');
  });

  it.each([3128, 8080, 1])(
    'bakes port %i into the script and squid.conf, and nowhere another port',
    (port) => {
      const s = renderDefaultCloudInit({ ...base, port });
      expect(s).toContain(`readonly PROXY_PORT=${port}\n`);
      expect(s.match(/^http_port .*$/gm)).toEqual([`http_port ${port}`]);
    },
  );

  it('embeds exactly the rendered squid.conf in a quoted heredoc (no shell expansion inside)', () => {
    const conf = renderSquidConf({ port: 3128, passwdFile: PASSWD_FILE });
    expect(script).toContain(`<<'PROXYPLANE_SQUID_CONF'\n${conf}PROXYPLANE_SQUID_CONF\n`);
  });

  it('reads the secret name from the instance metadata item and the token from the metadata server', () => {
    expect(script).toContain('readonly CREDENTIALS_ITEM=proxyplane-credentials-secret');
    expect(script).toContain('metadata_get "instance/attributes/${CREDENTIALS_ITEM}"');
    expect(script).toContain('metadata_get instance/service-accounts/default/token');
    expect(script).toContain("-H 'Metadata-Flavor: Google'");
    expect(script).toContain('http://metadata.google.internal/computeMetadata/v1');
    expect(script).toContain('"${SECRET_MANAGER_URL}/${SECRET_NAME}:access"');
    expect(script).toContain('https://secretmanager.googleapis.com/v1');
    expect(script).toContain('jq -er .payload.data | base64 -d');
  });

  it.each([
    ['projects/demo/secrets/proxy-creds', 'projects/demo/secrets/proxy-creds/versions/latest'],
    ['projects/demo/secrets/proxy-creds/versions/4', 'projects/demo/secrets/proxy-creds/versions/4'],
  ])('falls back to %s as %s', (credentialsSecret, expected) => {
    expect(renderDefaultCloudInit({ ...base, credentialsSecret })).toContain(
      `readonly DEFAULT_CREDENTIALS_SECRET='${expected}'\n`,
    );
  });

  it('keeps the token and the password off command lines and out of the output', () => {
    expect(script).not.toMatch(/set -x|xtrace/);
    expect(script).not.toMatch(/\becho\b/);
    // The bearer token and proxy credentials only ever travel to curl on stdin (-K -).
    expect(script).not.toMatch(/curl[^\n]*(Authorization|--user|-u |--proxy-user)/);
    const allowed = [
      /^ {2}PROXY_PASSWORD=\$\{CREDENTIALS#\*:\}$/,
      /^PROXY_PASSWORD=''$/,
      /^ {2}\[\[ \$\{PROXY_PASSWORD\} =~ \$\{pass_re\} \]\] \|\| die "[^$]*"$/,
      /^ {6}hash=\$\(printf '%s\\n' "\$\{PROXY_PASSWORD\}" \| openssl passwd -6 -salt "\$\{salt\}" -stdin\)$/,
      /^ {2}hash=\$\(printf '%s\\n' "\$\{PROXY_PASSWORD\}" \| openssl passwd -6 -stdin\)$/,
      /^ {2}basic=\$\(printf '%s:%s' "\$\{PROXY_USER\}" "\$\{PROXY_PASSWORD\}" \| base64 -w 0\)$/,
    ];
    const uses = lines.filter((l) => l.includes('PROXY_PASSWORD'));
    expect(uses.length).toBe(allowed.length);
    for (const line of uses)
      expect(
        allowed.some((re) => re.test(line)),
        line,
      ).toBe(true);
    // The decoded secret is only split, checked, and cleared: every read of it, braced or not (a
    // `log "… $CREDENTIALS"` would leak it), is one of these three, and there are exactly three.
    const credentialReads = lines.filter((l) => /\$\{?CREDENTIALS\b/.test(l));
    expect(credentialReads).toHaveLength(3);
    for (const line of credentialReads)
      expect(line).toMatch(/^\s+(\[\[ \$\{CREDENTIALS\} == \*:\* \]\]|PROXY_USER=|PROXY_PASSWORD=)/);
    expect(script).not.toMatch(/instance\/attributes\/[^"$]/);
  });

  it('never writes instance metadata, only its own guest attribute', () => {
    const writes = lines.filter((l) => /-X (PUT|POST|PATCH)/.test(l));
    expect(writes).toEqual(['  curl -fsS -X PUT --max-time 5 -H \'Metadata-Flavor: Google\' --data "$1" \\']);
    expect(script).toContain('"${METADATA_URL}/instance/guest-attributes/proxyplane/startup"');
  });

  it('is deterministic (it is part of the spec hash)', () => {
    expect(renderDefaultCloudInit({ ...base })).toBe(script);
  });

  it.each([
    [{ ...base, port: 22 }, 'sshd'],
    [{ ...base, port: 0 }, 'range'],
    [{ ...base, port: 65536 }, 'range'],
    [{ ...base, port: 3.5 }, 'integer'],
    [{ ...base, credentialsSecret: "projects/p/secrets/x'; rm -rf / #" }, 'shell injection'],
    [{ ...base, credentialsSecret: 'projects/p/secrets/x/versions/0' }, 'version 0'],
    [{ ...base, credentialsSecret: 'secrets/x' }, 'not a resource name'],
    [{ ...base, blockedDestinations: ['10.0.0.0/8; rm'] }, 'bad CIDR'],
    [{ ...base, extra: true }, 'unknown option'],
  ] as Array<[unknown, string]>)('refuses %j (%s)', (options) => {
    expect(() => renderDefaultCloudInit(options as never)).toThrow();
  });
});

describe('connectPortsOfStartupScript', () => {
  it('reads the CONNECT ports back from the squid.conf a rendered script carries (the squid default when unset)', () => {
    expect(connectPortsOfStartupScript(script)).toEqual([443]);
    expect(
      connectPortsOfStartupScript(renderDefaultCloudInit({ ...base, connectPorts: [8443, 443, 18321] })),
    ).toEqual([443, 8443, 18321]);
  });

  it("is null for a script that is not the default one (the operator's own)", () => {
    expect(connectPortsOfStartupScript('#!/bin/bash\napt-get install -y tinyproxy\n')).toBeNull();
    expect(connectPortsOfStartupScript('')).toBeNull();
  });
});
