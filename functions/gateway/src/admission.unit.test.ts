import { describe, expect, it } from 'vitest';
import type { StalenessPhase } from '../../../shared/src/domain/gateway/staleness.js';
import { type AdmissionGate, admit } from './admission.js';
import { ClientAuth } from './client-auth.js';
import { parseRequestHead } from './head.js';

const auth = new ClientAuth([{ username: 'crawler', password: 's3cret' }], []);
const GOOD = `Proxy-Authorization: Basic ${Buffer.from('crawler:s3cret').toString('base64')}`;
const BAD = `Proxy-Authorization: Basic ${Buffer.from('crawler:nope').toString('base64')}`;

function gate(accepting = true, phase: StalenessPhase = 'fresh'): AdmissionGate {
  return { auth, worker: { accepting, phase: () => phase } };
}

const head = (text: string) => parseRequestHead(text);

describe('admit', () => {
  it.each([
    ['no parseable head', null, gate(), { ok: false, status: 400, code: 'bad_request' }],
    [
      'no credentials',
      head('CONNECT example.com:443 HTTP/1.1'),
      gate(),
      { ok: false, status: 407, code: 'proxy_auth_required' },
    ],
    [
      'a wrong password',
      head(`CONNECT example.com:443 HTTP/1.1\r\n${BAD}`),
      gate(),
      { ok: false, status: 407, code: 'proxy_auth_required' },
    ],
    [
      'credentials are checked before the worker state',
      head('CONNECT example.com:443 HTTP/1.1'),
      gate(false, 'stale'),
      { ok: false, status: 407, code: 'proxy_auth_required' },
    ],
    [
      'no snapshot yet',
      head(`CONNECT example.com:443 HTTP/1.1\r\n${GOOD}`),
      gate(false, 'awaiting_snapshot'),
      { ok: false, status: 503, code: 'no_snapshot' },
    ],
    [
      'a stale snapshot',
      head(`CONNECT example.com:443 HTTP/1.1\r\n${GOOD}`),
      gate(false, 'stale'),
      { ok: false, status: 503, code: 'snapshot_stale' },
    ],
    [
      'not accepting while fresh',
      head(`CONNECT example.com:443 HTTP/1.1\r\n${GOOD}`),
      gate(false, 'fresh'),
      { ok: false, status: 503, code: 'not_accepting' },
    ],
    [
      'the worker state is checked before the target',
      head(`GET /relative HTTP/1.1\r\n${GOOD}`),
      gate(false, 'shutting_down'),
      { ok: false, status: 503, code: 'shutting_down' },
    ],
    [
      'a target the listener does not serve',
      head(`GET /relative HTTP/1.1\r\n${GOOD}`),
      gate(),
      { ok: false, status: 400, code: 'not_a_proxy_request' },
    ],
    [
      'a chunked body',
      head(`POST http://example.com/ HTTP/1.1\r\n${GOOD}\r\nTransfer-Encoding: chunked`),
      gate(),
      { ok: false, status: 411, code: 'chunked_request_body_unsupported' },
    ],
    [
      'CONNECT',
      head(`CONNECT example.com:443 HTTP/1.1\r\n${GOOD}`),
      gate(),
      {
        ok: true,
        user: 'crawler',
        connect: true,
        host: 'example.com',
        port: 443,
        path: '',
        hostHeader: '',
        bodyLength: 0,
      },
    ],
    [
      'plain HTTP with a body',
      head(`POST http://Example.com:8080/a?b HTTP/1.1\r\n${GOOD}\r\nContent-Length: 5`),
      gate(),
      {
        ok: true,
        user: 'crawler',
        connect: false,
        host: 'example.com',
        port: 8080,
        path: '/a?b',
        hostHeader: 'Example.com:8080',
        bodyLength: 5,
      },
    ],
  ])('%s', (_name, h, g, expected) => {
    expect(admit(h, g)).toEqual(expected);
  });

  it('lets anyone in as the anonymous user when auth is not required', () => {
    const open: AdmissionGate = { ...gate(), auth: new ClientAuth([], [], false) };
    expect(admit(head('CONNECT example.com:443 HTTP/1.1'), open)).toMatchObject({ ok: true, user: '' });
  });
});
