import { describe, expect, it } from 'vitest';
import { FetchRequest } from './fetch-request.js';

describe('FetchRequest headers', () => {
  const parse = (headers: Record<string, string>) =>
    FetchRequest.safeParse({ url: 'http://e.com/', headers });

  // Dropped by name (DROPPED_REQUEST_HEADERS), their '_' spellings were forwarded: a server behind that
  // maps '_' to '-' (CGI, WSGI) would frame or route the request by them.
  it.each([
    ['Transfer_Encoding', false],
    ['content_length', false],
    ['HOST_', true], // reads as "host-", no framing field
    ['X-Custom', true],
  ])('%s: accepted %s', (name, accepted) => {
    expect(parse({ [name]: 'x' }).success).toBe(accepted);
  });

  it('takes other names with underscores', () => {
    expect(parse({ X_Request_Id: '1', accept_language: 'en' }).success).toBe(true);
  });

  it('says why it refused one', () => {
    const r = parse({ Transfer_Encoding: 'chunked' });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain('Content_Length or Transfer_Encoding');
  });
});
