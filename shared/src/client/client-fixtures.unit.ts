// What the typed client's unit tests share: a grant as the service answers it, and a fetch that plays
// back canned answers and records what was sent.
export const grant = {
  leaseId: 'L1234567890123456789012',
  proxy: {
    name: 'p1',
    url: 'http://u:p@10.0.0.1:3128',
    host: '10.0.0.1',
    port: 3128,
    protocol: 'http',
    attributes: {},
    latencyMillis: null,
  },
  expiresAt: '2026-01-01T00:05:00.000Z',
  ttlSeconds: 300,
  target: null,
  exclusive: false,
};

/** An answer body: JSON-encoded, except a `Raw` one, sent as it is (what a front end in the way says). */
export class Raw {
  constructor(readonly text: string) {}
}

export function fakeFetch(answers: Array<readonly [number, unknown, Record<string, string>?]>) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const fetch = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const [status, body, headers] = answers.shift() ?? [500, { error: 'internal' }];
    const text = body === null ? null : body instanceof Raw ? body.text : JSON.stringify(body);
    return new Response(text, { status, headers });
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls };
}
