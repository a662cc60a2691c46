// terraform/scripts/gateway-connect-startup.sh, the boot script of a CONNECT-listener gateway VM
// (docs/deploy.md), run by bash as on the VM, with the VM's tools replaced by recording stand-ins on PATH:
// `curl` answers as the metadata server and Secret Manager would, `docker`, `docker-credential-gcr` and
// `iptables` record what they were asked. Only the state directory (/var/lib/pp-gateway) is moved to a
// temporary one.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayEnv } from '../../functions/gateway/src/config.js';
import { SINGLE_THREADED_GC } from '../../functions/gateway/src/gc-threads.js';
import { terraformDir } from './support/paths.js';

const TOKEN = 'ya29.token-that-must-stay-off-argv';
const USERS =
  '[\n  {"username": "crawler", "password": "pa ss:w0rd"},\n  {"username": "ci", "password": "x"}\n]\n';
const IMAGE = 'europe-west1-docker.pkg.dev/proj-1/proxyplane/gateway:v7';
const METADATA: Record<string, string> = {
  'project/project-id': 'proj-1',
  'instance/attributes/gateway-image': IMAGE,
  'instance/attributes/clients-secret': 'gateway-clients',
  'instance/attributes/region': 'europe-west1',
  'instance/attributes/control-plane-url': 'https://pp-api-abc-ew.a.run.app',
  'instance/attributes/log-level': 'debug',
  'instance/attributes/gc-marking': 'incremental',
  'instance/attributes/gc-threads': 'single',
  'instance/service-accounts/default/token': `{"access_token":"${TOKEN}","expires_in":3599,"token_type":"Bearer"}`,
};
// Secret Manager's REST answer to versions/latest:access, pretty-printed as the API sends it.
const ACCESS = `{
  "name": "projects/123/secrets/gateway-clients/versions/3",
  "payload": {
    "data": "${Buffer.from(USERS).toString('base64')}",
    "dataCrc32c": "1234567"
  }
}
`;

// Every stand-in appends its argv (NUL-separated, one call per line) to $LOG/<tool>.
const STUBS: Record<string, string> = {
  curl: `#!/bin/bash
printf '%s\\0' "$@" >>"$LOG/curl"; echo >>"$LOG/curl"
url="\${@: -1}"
# -o FILE: the answer goes there (stdout otherwise).
out=/dev/stdout; prev=
for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
case "$url" in
  http://metadata.google.internal/computeMetadata/v1/*)
    f="$FIX/md/$(printf '%s' "\${url#http://metadata.google.internal/computeMetadata/v1/}" | tr / _)"
    [ -f "$f" ] || exit 22
    cat "$f" ;;
  https://secretmanager.googleapis.com/v1/projects/proj-1/secrets/gateway-clients/versions/latest:access)
    cat >>"$LOG/curl.stdin"
    [ -f "$FIX/secret-fails" ] && exit 22
    # Refused while $FIX/secret-refusals holds a count above 0 (the reader grant not yet propagated).
    if [ -f "$FIX/secret-refusals" ]; then
      n=$(cat "$FIX/secret-refusals")
      if [ "$n" -gt 0 ]; then echo $((n - 1)) >"$FIX/secret-refusals"; exit 22; fi
    fi
    cat "$FIX/access.json" >"$out" ;;
  *) exit 6 ;;
esac
`,
  docker: `#!/bin/bash
printf '%s\\0' "$@" >>"$LOG/docker"; echo >>"$LOG/docker"
# A pull refused while $FIX/pull-refusals holds a count above 0 (the grant not yet propagated).
if [ "$1" = pull ] && [ -f "$FIX/pull-refusals" ]; then
  n=$(cat "$FIX/pull-refusals")
  if [ "$n" -gt 0 ]; then echo $((n - 1)) >"$FIX/pull-refusals"; exit 1; fi
fi
[ "$1 $2" = "rm -f" ] && [ ! -f "$FIX/running" ] && exit 1
[ "$1" = run ] && touch "$FIX/running"
exit 0
`,
  'docker-credential-gcr': `#!/bin/bash
printf '%s\\0' "$@" "HOME=$HOME" >>"$LOG/docker-credential-gcr"; echo >>"$LOG/docker-credential-gcr"
`,
  iptables: `#!/bin/bash
printf '%s\\0' "$@" >>"$LOG/iptables"; echo >>"$LOG/iptables"
case " $* " in
  *" -C "*) [ -f "$FIX/rule" ] ;;
  *" -A "*) touch "$FIX/rule" ;;
esac
`,
};

let dir: string;
let state: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pp-gw-startup-'));
  state = join(dir, 'state');
  for (const d of ['bin', 'log', 'fix/md']) mkdirSync(join(dir, d), { recursive: true });
  for (const [name, body] of Object.entries(STUBS)) {
    writeFileSync(join(dir, 'bin', name), body);
    chmodSync(join(dir, 'bin', name), 0o755);
  }
  for (const [path, value] of Object.entries(METADATA)) {
    writeFileSync(join(dir, 'fix/md', path.replaceAll('/', '_')), value);
  }
  writeFileSync(join(dir, 'fix/access.json'), ACCESS);
  const script = readFileSync(join(terraformDir, 'scripts/gateway-connect-startup.sh'), 'utf8');
  expect(script).toContain('\nstate=/var/lib/pp-gateway\n');
  writeFileSync(
    join(dir, 'startup.sh'),
    script
      .replace('\nstate=/var/lib/pp-gateway\n', `\nstate=${state}\n`)
      .replace('\n    sleep 15\n', '\n    sleep 0\n'),
  );
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

function boot() {
  return spawnSync('bash', [join(dir, 'startup.sh')], {
    encoding: 'utf8',
    env: { PATH: `${join(dir, 'bin')}:/usr/bin:/bin`, LOG: join(dir, 'log'), FIX: join(dir, 'fix') },
  });
}

/** The recorded calls of one stand-in, each as its argv. */
function calls(tool: string): string[][] {
  let text = '';
  try {
    text = readFileSync(join(dir, 'log', tool), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\0').slice(0, -1));
}

/** docker's calls but its pulls: what the script does with the container. */
const containerCalls = () => calls('docker').filter((a) => a[0] !== 'pull');

describe('the CONNECT gateway VM startup script', () => {
  it('pulls the image first, and tries a refused pull again until the grant has propagated', () => {
    writeFileSync(join(dir, 'fix/pull-refusals'), '3');
    const run = boot();
    expect(run.status).toBe(0);
    expect(calls('docker').map((a) => a.slice(0, 2).join(' '))).toEqual([
      `pull -q`,
      `pull -q`,
      `pull -q`,
      `pull -q`,
      'rm -f',
      'run -d',
    ]);
    expect(calls('docker')[0]).toEqual(['pull', '-q', IMAGE]);
  });

  it('the secret read and the pull share one budget of tries: together within autohealing\u2019s first look', () => {
    writeFileSync(join(dir, 'fix/secret-refusals'), '10');
    writeFileSync(join(dir, 'fix/pull-refusals'), '1000');
    const run = boot();
    expect(run.status).not.toBe(0);
    const reads = calls('curl').filter((a) => a.at(-1)?.startsWith('https://secretmanager'));
    expect(reads).toHaveLength(11);
    expect(calls('docker').filter((a) => a[0] === 'pull')).toHaveLength(8); // 10 + 8 refused: 18
    expect(containerCalls()).toEqual([]);
  });

  it('reads the clients secret again while the reader grant propagates', () => {
    writeFileSync(join(dir, 'fix/secret-refusals'), '2');
    const run = boot();
    expect(run.status).toBe(0);
    const reads = calls('curl').filter((a) => a.at(-1)?.startsWith('https://secretmanager'));
    expect(reads).toHaveLength(3);
    expect(readFileSync(join(state, 'env'), 'utf8')).toMatch(
      /^GATEWAY_CLIENT_USERS=\[ +\{"username": "crawler"/,
    );
    expect(containerCalls().map((a) => a[0])).toEqual(['rm', 'run']);
    // The secret's answer is not left on disk once read (the env file alone holds the users).
    expect(existsSync(join(state, 'access.json'))).toBe(false);
  });

  it('gives up after 18 refused tries (about 4½ minutes), starting nothing', () => {
    writeFileSync(join(dir, 'fix/pull-refusals'), '1000');
    const run = boot();
    expect(run.status).not.toBe(0);
    expect(calls('docker').filter((a) => a[0] === 'pull')).toHaveLength(18);
    expect(containerCalls()).toEqual([]);
  });

  it('joins user:password pairs one per line with commas, as the gateway splits them', () => {
    const lines = 'crawler:pa ss:w0rd\r\nci:x\r\n';
    writeFileSync(
      join(dir, 'fix/access.json'),
      ACCESS.replace(Buffer.from(USERS).toString('base64'), Buffer.from(lines).toString('base64')),
    );
    const run = boot();
    expect(run.status).toBe(0);
    const line = readFileSync(join(state, 'env'), 'utf8').split('\n')[0]!;
    expect(
      GatewayEnv.parse({ GATEWAY_CLIENT_USERS: line.slice(line.indexOf('=') + 1) }).GATEWAY_CLIENT_USERS,
    ).toEqual([
      { username: 'crawler', password: 'pa ss:w0rd' },
      { username: 'ci', password: 'x' },
    ]);
  });

  it('writes the client users to a root-only env file on one line and starts the gateway with it', () => {
    const run = boot();
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);

    const envFile = join(state, 'env');
    expect(statSync(envFile).mode & 0o777).toBe(0o600);
    expect(statSync(state).mode & 0o777).toBe(0o700);
    const lines = readFileSync(envFile, 'utf8').split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    const [name, value] = [
      lines[0]!.slice(0, lines[0]!.indexOf('=')),
      lines[0]!.slice(lines[0]!.indexOf('=') + 1),
    ];
    expect(name).toBe('GATEWAY_CLIENT_USERS');
    // What the gateway reads from it is the secret's users, whole.
    expect(GatewayEnv.parse({ GATEWAY_CLIENT_USERS: value }).GATEWAY_CLIENT_USERS).toEqual([
      { username: 'crawler', password: 'pa ss:w0rd' },
      { username: 'ci', password: 'x' },
    ]);

    // The token reached Secret Manager on curl's stdin only.
    expect(readFileSync(join(dir, 'log/curl.stdin'), 'utf8')).toBe(`Authorization: Bearer ${TOKEN}\n`);
    for (const tool of ['curl', 'docker', 'docker-credential-gcr', 'iptables']) {
      for (const argv of calls(tool)) {
        expect(argv.join(' ')).not.toContain(TOKEN);
        expect(argv.join(' ')).not.toContain('pa ss:w0rd');
      }
    }

    expect(calls('docker-credential-gcr')).toEqual([
      ['configure-docker', '--registries=europe-west1-docker.pkg.dev', `HOME=${state}`],
    ]);
    expect(calls('iptables').map((a) => a[1])).toEqual(['-C', '-A']);
    expect(calls('iptables')[1]).toEqual(
      '-w -A INPUT -p tcp -m multiport --dports 8080,8081 -j ACCEPT'.split(' '),
    );
    const docker = containerCalls();
    expect(docker[0]).toEqual(['rm', '-f', 'pp-gateway']);
    expect(docker[1]).toEqual([
      'run',
      '-d',
      '--name',
      'pp-gateway',
      '--restart=always',
      '--network=host',
      `--env-file=${envFile}`,
      '-e',
      'GOOGLE_CLOUD_PROJECT=proj-1',
      '-e',
      'REGION=europe-west1',
      '-e',
      'CONTROL_PLANE_URL=https://pp-api-abc-ew.a.run.app',
      '-e',
      'GATEWAY_PROXY_PORT=8081',
      '-e',
      'LOG_LEVEL=debug',
      '-e',
      'GATEWAY_GC_MARKING=incremental',
      IMAGE,
      // gc-threads=single: the image's command with the Node flag (functions/gateway/src/gc-threads.ts).
      'node',
      SINGLE_THREADED_GC,
      '.',
    ]);
  });

  it('at the next boot replaces the container and leaves the firewall rule it already added', () => {
    expect(boot().status).toBe(0);
    const second = boot();
    expect(second.status).toBe(0);
    expect(calls('iptables').map((a) => a[1])).toEqual(['-C', '-A', '-C']);
    expect(containerCalls().map((a) => a[0])).toEqual(['rm', 'run', 'rm', 'run']);
  });

  it("gc-threads=parallel runs the image's own command", () => {
    writeFileSync(join(dir, 'fix/md/instance_attributes_gc-threads'), 'parallel');
    expect(boot().status).toBe(0);
    expect(containerCalls()[1]?.at(-1)).toBe(IMAGE);
  });

  it('a VM created without the optional settings runs the image defaults (info, atomic, its own command)', () => {
    for (const key of ['log-level', 'gc-marking', 'gc-threads']) {
      rmSync(join(dir, `fix/md/instance_attributes_${key}`));
    }
    const run = boot();
    expect(run.status).toBe(0);
    const args = containerCalls()[1] ?? [];
    // The same as the gateway's own defaults, so a VM without them behaves as the image does.
    const defaults = GatewayEnv.parse({ GATEWAY_CLIENT_USERS: '[{"username":"u","password":"p"}]' });
    expect(args).toContain(`LOG_LEVEL=${defaults.LOG_LEVEL}`);
    expect(args).toContain(`GATEWAY_GC_MARKING=${defaults.GATEWAY_GC_MARKING}`);
    expect(args.at(-1)).toBe(IMAGE);
  });

  it('starts nothing when the secret cannot be read', () => {
    writeFileSync(join(dir, 'fix/secret-fails'), '');
    const run = boot();
    expect(run.status).not.toBe(0);
    expect(containerCalls()).toEqual([]);
    expect(calls('docker-credential-gcr')).toEqual([]);
  });
});
