import { describe, expect, it } from 'vitest';
import { GCLOUD_WITHHELD } from './config.js';
import { ApiCallError, InputError, UnreachableError, UsageError } from './errors.js';
import { BAD_PORT_MESSAGE, describeFailure } from './hints.js';

describe('describeFailure', () => {
  it.each([
    [
      new ApiCallError(404, 'not_found', { error: 'not_found' }, '/v1/proxies/x'),
      1,
      /^error: not_found — no such proxy/,
    ],
    [new ApiCallError(404, 'not_found', { error: 'not_found' }, '/v1/jobs'), 1, /no route \/v1\/jobs/],
    // The request id is what finds the failure's log line (and its stack) on the service's side.
    [
      new ApiCallError(
        500,
        'internal',
        { error: 'internal', message: 'internal error', requestId: 'r-4f2a9c' },
        '/v1/proxies/x',
      ),
      1,
      /^error: internal — the API failed on its side; its logs have the details under requestId r-4f2a9c$/,
    ],
    // The route's own limit, as the API's message gives it: routing takes 256 KiB, not the default 64.
    [
      new ApiCallError(
        413,
        'payload_too_large',
        { error: 'payload_too_large', message: 'request bodies here are limited to 262144 bytes' },
        '/v1/gateway/routing',
      ),
      1,
      /^error: payload_too_large — the request is over the API's limit here, 256 KiB$/,
    ],
    [
      new ApiCallError(413, 'payload_too_large', { error: 'payload_too_large' }, '/v1/proxies'),
      1,
      /^error: payload_too_large — the request is over the API's body limit$/,
    ],
    [
      new ApiCallError(401, 'unauthenticated', {}, '/v1/proxies'),
      1,
      /^error: unauthenticated — no valid credential: set PROXYPLANE_TOKEN/,
    ],
    // Said with where the refused token came from: "run gcloud auth login" changed nothing for a token in
    // $PROXYPLANE_TOKEN, which is sent first.
    [
      new ApiCallError(401, 'unauthenticated', {}, '/v1/proxies', false, 'PROXYPLANE_TOKEN'),
      1,
      /^error: unauthenticated — the token in \$PROXYPLANE_TOKEN was refused \(expired, or not one this API knows\): replace it, or unset it/,
    ],
    [
      new ApiCallError(401, 'unauthenticated', {}, '/v1/proxies', false, 'gcloud auth print-identity-token'),
      1,
      /^error: unauthenticated — the gcloud identity token was refused \(expired, or for another audience/,
    ],
    // No token sent because gcloud's is not sent in the clear to another host: "gcloud auth login" would
    // change nothing.
    [
      new ApiCallError(401, 'unauthenticated', {}, '/v1/proxies', false, GCLOUD_WITHHELD),
      1,
      /^error: unauthenticated — no credential sent: the gcloud identity token goes only to an https:\/\/ API URL or one on this machine/,
    ],
    [
      new ApiCallError(401, 'unauthenticated', {}, '/v1/proxies', false, 'the local plane (state.json)'),
      1,
      /^error: unauthenticated — the token from the local plane \(state.json\) was refused: was that plane restarted/,
    ],
    [
      new ApiCallError(
        403,
        'forbidden',
        { error: 'forbidden', message: 'this is a crawler token; this route takes an admin credential' },
        '/v1/proxies',
      ),
      1,
      /^error: forbidden — that is a crawler token, which opens discovery and leases only: admin commands need an admin token in PROXYPLANE_ADMIN_TOKEN/,
    ],
    [
      new ApiCallError(403, 'forbidden', { error: 'forbidden', message: 'x@example.com is not an admin' }),
      1,
      // The API's reason kept: it names the identity gcloud sent.
      /^error: forbidden — x@example\.com is not an admin: ask for it to be added to the API's admin list \(Terraform's admin_emails, ADMIN_EMAILS on the service\), or check which account gcloud is using/,
    ],
    [
      new ApiCallError(403, 'forbidden', {
        error: 'forbidden',
        message: 'the token carries no verified email',
      }),
      1,
      // Not "ask to be added to the admin list": no email, nothing the list could name.
      /^error: forbidden — the token carries no verified email: the API's admins are named by email, and a service account's identity token carries one only when asked — `PROXYPLANE_TOKEN="\$\(gcloud auth print-identity-token --impersonate-service-account=SA --include-email --audiences="\$API"\)"`$/,
    ],
    [
      new ApiCallError(403, 'forbidden', { error: 'forbidden' }),
      1,
      /^error: forbidden — your identity is valid but not an admin: ask for it to be added/,
    ],
    [new ApiCallError(404, 'unknown_job', {}, '/v1/jobs/x:run'), 1, /jobs list` shows the job names/],
    [
      new ApiCallError(400, 'port_not_allowed', { error: 'port_not_allowed', allowedPorts: [3128, 8443] }),
      1,
      /^error: port_not_allowed — the managed proxies' firewall opens only tcp:3128, tcp:8443: use one/,
    ],
    [
      new ApiCallError(409, 'no_match', {
        error: 'no_match',
        considered: 3,
        atCapacity: 1,
        inCooldown: 2,
        unhealthy: 0,
      }),
      1,
      /3 match the selector, 1 at capacity, 2 cooling down for the target, 0 unhealthy$/,
    ],
    [
      new ApiCallError(409, 'no_match', {
        error: 'no_match',
        considered: 1,
        atCapacity: 0,
        inCooldown: 1,
        cooldownEndsAt: '2026-12-02T18:30:00.000Z',
        unhealthy: 0,
      }),
      1,
      /1 cooling down for the target \(the first until 2026-12-02T18:30:00\.000Z\), 0 unhealthy$/,
    ],
    [
      new ApiCallError(409, 'no_match', {
        error: 'no_match',
        considered: 3,
        cordoned: 2,
        inGateway: 1,
        atCapacity: 0,
        inCooldown: 0,
        unhealthy: 0,
      }),
      1,
      /0 unhealthy, 2 cordoned \(`proxyplane proxies uncordon NAME` to lease it again\), 1 held by the gateway/,
    ],
    [
      new ApiCallError(409, 'proxy_cordoned', {}),
      1,
      /^error: proxy_cordoned — an operator cordoned its proxy/,
    ],
    [
      new ApiCallError(409, 'no_match', {
        error: 'no_match',
        considered: 2,
        inGateway: 2,
        atCapacity: 0,
        inCooldown: 0,
        unhealthy: 0,
      }),
      1,
      /0 unhealthy, 2 held by the gateway \(`proxyplane gateway reclaim NAME` frees one for leases once its owner drained it\)$/,
    ],
    [
      new ApiCallError(409, 'no_match', {
        error: 'no_match',
        considered: 0,
        inGateway: 0,
        atCapacity: 0,
        inCooldown: 0,
        unhealthy: 0,
        otherProtocol: 1,
      }),
      1,
      // The CLI does not know which protocol they speak, only that it was not asked for: the hint must
      // not tell a crawler that asked for http (the default) to ask for http.
      /0 match the selector, .*0 unhealthy; 1 more match the selector but speak a protocol not asked for \(`--protocol http,socks5` leases either; SOCKS5 is opt-in\)$/,
    ],
    [
      new ApiCallError(418, 'teapot', { error: 'teapot', message: 'short and stout' }),
      1,
      /^error: teapot — short and stout$/,
    ],
    [
      new UnreachableError('http://h:1', {
        cause: Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }),
      }),
      1,
      /^error: unreachable — cannot reach http:\/\/h:1 \(ECONNREFUSED\)/,
    ],
    [
      new UnreachableError('http://h:1', {
        cause: Object.assign(new TypeError('fetch failed'), {
          cause: Object.assign(new Error('getaddrinfo ENOTFOUND h'), { code: 'ENOTFOUND' }),
        }),
      }),
      1,
      /^error: unreachable — cannot reach http:\/\/h:1 \(ENOTFOUND\)/,
    ],
    [
      new UnreachableError('https://h:1', {
        cause: Object.assign(new TypeError('fetch failed'), {
          cause: Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }),
        }),
      }),
      1,
      /^error: unreachable — cannot reach https:\/\/h:1 \(DEPTH_ZERO_SELF_SIGNED_CERT\)/,
    ],
    [
      new UnreachableError('http://h:1', {
        cause: new DOMException('aborted due to timeout', 'TimeoutError'),
      }),
      1,
      /^error: unreachable — cannot reach http:\/\/h:1 \(timed out\)/,
    ],
    // fetch's own refusal of a port the Fetch standard blocks: no request was made, the plane may be up.
    [
      new UnreachableError('http://h:6000', {
        cause: new TypeError('fetch failed', { cause: new Error('bad port') }),
      }),
      1,
      /^error: unreachable — cannot reach http:\/\/h:6000: fetch refuses port 6000 \(.*\): .*another port/,
    ],
    [new InputError('bad file', ['a: b']), 2, /^error: invalid_input — bad file/],
    [new UsageError('missing proxy NAME'), 2, /^error: usage — missing proxy NAME/],
  ])('%s → exit %i', (err, code, first) => {
    const { lines, exitCode } = describeFailure(err);
    expect(exitCode).toBe(code);
    expect(lines[0]).toMatch(first);
  });

  it('never prints the message of a failure that is not a network error: it may quote the token', () => {
    const err = new UnreachableError('http://h:1', {
      cause: new TypeError('Headers.append: "Bearer sk-SECRET\nx" is an invalid header value.'),
    });
    const { lines, exitCode } = describeFailure(err);
    expect(exitCode).toBe(1);
    expect(lines[0]).toMatch(/^error: unreachable — cannot reach http:\/\/h:1 \(no answer\)/);
    expect(lines.join('\n')).not.toContain('SECRET');
  });

  it('lists the API’s validation issues under the code', () => {
    const err = new ApiCallError(400, 'invalid_request', {
      error: 'invalid_request',
      issues: [{ path: 'spec.zone', message: 'a GCE zone such as us-central1-a' }],
    });
    expect(describeFailure(err).lines).toEqual([
      'error: invalid_request — the API refused the input: see the issues below',
      '  spec.zone: a GCE zone such as us-central1-a',
    ]);
  });

  // An API older than the one that cuts the userinfo itself quotes the host as JSON: a password with a
  // space, a quote or an apostrophe (a generated one) is still cut, up to the last '@' of the quoted value.
  it.each(['alice:pa ss@h.example', 'alice:p"w@h.example', "alice:it's@h.example", 'alice:a@b c@h.example'])(
    'cuts the userinfo of a quoted %j whatever its password holds',
    (host) => {
      const message = `endpoint.host must be a DNS name or an IP address (no scheme, port or credentials): ${JSON.stringify(host)}`;
      const err = new ApiCallError(400, 'invalid_request', {
        error: 'invalid_request',
        message,
        issues: [{ path: 'endpoint.host', code: 'invalid_host', message }],
      });
      const lines = describeFailure(err).lines;
      expect(lines[1]).toBe(
        '  endpoint.host: endpoint.host must be a DNS name or an IP address (no scheme, port or credentials): "…@h.example"',
      );
      expect(lines.join('\n')).not.toMatch(/alice|pa ss|p\\"w|it's|b c/);
    },
  );

  it('never prints the password of a user:password@host the API quotes back (proxies patch of a host)', () => {
    // The API's own answer to PATCH …/spec {"endpoint": {"host": "alice:s3cret@h.example"}}.
    const message =
      'endpoint.host must be a DNS name or an IP address (no scheme, port or credentials): "alice:s3cret@h.example"';
    const err = new ApiCallError(400, 'invalid_request', {
      error: 'invalid_request',
      message,
      issues: [{ path: 'endpoint.host', code: 'invalid_host', message }],
    });
    expect(describeFailure(err).lines).toEqual([
      'error: invalid_request — the API refused the input: see the issues below',
      '  endpoint.host: endpoint.host must be a DNS name or an IP address (no scheme, port or credentials): "…@h.example"',
    ]);
    // A code without a hint prints the API's message: cut the same way. An e-mail address is no userinfo.
    const other = new ApiCallError(400, 'some_new_code', { message: `${message}; x@example.com` });
    expect(describeFailure(other).lines[0]).toBe(
      'error: some_new_code — endpoint.host must be a DNS name or an IP address (no scheme, port or credentials): "…@h.example"; x@example.com',
    );
  });
});

// 409 conflict is two things: a proxy write that kept losing its race (running it again is the remedy),
// and a job action Cloud Scheduler refuses for the job's state (operations-jobs.md): a DISABLED or
// UPDATE_FAILED job stays so however often it is asked, and only the API's message says why.
describe('the conflict hint', () => {
  const conflict = (message: string | undefined, path: string) =>
    describeFailure(new ApiCallError(409, 'conflict', { error: 'conflict', message }, path)).lines[0];

  it('is the API’s message for a job the scheduler refuses, with no advice to run it again', () => {
    const line = conflict(
      'job gc-sweep is DISABLED, not ENABLED: resume cannot change that (see terraform/scheduler.tf)',
      '/v1/jobs/gc-sweep:run',
    );
    expect(line).toBe(
      'error: conflict — job gc-sweep is DISABLED, not ENABLED: resume cannot change that (see terraform/scheduler.tf)',
    );
    expect(line).not.toContain('run the command again');
  });

  it('says to run a proxy write again: the API gave up on a race', () => {
    expect(conflict('proxy "p1" kept changing concurrently; retry', '/v1/proxies/p1/spec')).toBe(
      'error: conflict — someone else kept changing the same proxy: run the command again',
    );
  });

  it('without a message elsewhere, says only that the API refused it', () => {
    expect(conflict(undefined, '/v1/jobs/gc-sweep:pause')).toBe(
      'error: conflict — the API answered HTTP 409',
    );
  });
});

// refusedPort matches the text of Node's fetch (undici) for a blocked port, there being no code to match:
// this pins that text, and that there still is no code, on the Node the tests run on.
describe("Node's fetch refusing a blocked port", () => {
  it('rejects with TypeError("fetch failed") caused by an Error with that text and no code', async () => {
    const err = await fetch('http://127.0.0.1:6000').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    const cause = (err as { cause?: unknown }).cause;
    expect(cause).toBeInstanceOf(Error);
    expect((cause as Error).message).toBe(BAD_PORT_MESSAGE);
    expect((cause as { code?: unknown }).code).toBeUndefined();
    expect(describeFailure(new UnreachableError('http://127.0.0.1:6000', { cause: err })).lines[0]).toMatch(
      /fetch refuses port 6000/,
    );
  });
});
