// The rendered startup script as the tools see it: bash parses it, shellcheck finds nothing, and the
// squid.conf it embeds is one Debian's squid accepts.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderSquidConf } from '../../shared/src/domain/cloud-init/squid-conf.js';
import { PASSWD_FILE, renderDefaultCloudInit } from '../../shared/src/domain/cloud-init/startup-script.js';
import { toolsMissing } from '../support/debian-tools.js';
import { scratchDir } from './cloud-init-support.js';

const noShellcheck = await toolsMissing(['shellcheck']);
const noSquid = await toolsMissing(['squid']);

const variants = [
  { port: 3128, credentialsSecret: 'projects/demo/secrets/proxy-creds' },
  {
    port: 8080,
    credentialsSecret: 'projects/demo/secrets/fleet_a-creds/versions/7',
    connectPorts: [443, 8443],
    blockedDestinations: [],
  },
];

describe('the default cloud-init script', () => {
  const dir = scratchDir('pp-cloud-init-');

  it.each(variants)('bash -n accepts it (port $port)', (options) => {
    const file = join(dir, `startup-${options.port}.sh`);
    writeFileSync(file, renderDefaultCloudInit(options));
    const r = spawnSync('bash', ['-n', file], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it.skipIf(noShellcheck !== '')(
    `shellcheck finds nothing${noShellcheck ? ` (skipped: ${noShellcheck})` : ''}`,
    () => {
      for (const options of variants) {
        const file = join(dir, `shellcheck-${options.port}.sh`);
        writeFileSync(file, renderDefaultCloudInit(options));
        const r = spawnSync('shellcheck', ['--shell=bash', '--severity=style', file], { encoding: 'utf8' });
        expect(r.stdout).toBe('');
        expect(r.status).toBe(0);
      }
    },
  );

  it.skipIf(noSquid !== '')(
    `squid -k parse accepts the embedded squid.conf${noSquid ? ` (skipped: ${noSquid})` : ''}`,
    () => {
      for (const options of variants) {
        const script = renderDefaultCloudInit(options);
        const conf = /<<'PROXYPLANE_SQUID_CONF'\n([\s\S]*?)PROXYPLANE_SQUID_CONF\n/.exec(script)?.[1];
        const { credentialsSecret: _, ...squidOptions } = options;
        expect(conf).toBe(renderSquidConf({ ...squidOptions, passwdFile: PASSWD_FILE }));
        const file = join(dir, `squid-${options.port}.conf`);
        writeFileSync(file, conf!);
        const r = spawnSync('squid', ['-k', 'parse', '-f', file], { encoding: 'utf8' });
        expect(r.status, r.stderr).toBe(0);
        // The only warning is the one `via off` earns by design.
        const warnings = r.stderr.split('\n').filter((l) => /WARNING|ERROR|FATAL/.test(l));
        expect(warnings.map((l) => l.replace(/^.*\| /, ''))).toEqual([
          'WARNING: HTTP requires the use of Via',
        ]);
      }
    },
  );
});
