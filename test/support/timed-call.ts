// One JSON request to a test API with its answer and how long it took: the stall tests hold a Firestore
// call forever and check the API answers 503 within its deadline, not the client's 300 s.

export interface TimedAnswer {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown> | null;
  ms: number;
}

/** `timeoutMs` aborts a request the API never answers: the test reads that as its failure. */
export async function timedCall(
  url: string,
  method: string,
  opts: { body?: unknown; token?: string; timeoutMs: number },
): Promise<TimedAnswer> {
  const started = performance.now();
  const res = await fetch(url, {
    method,
    headers: {
      ...(opts.token === undefined ? {} : { authorization: `Bearer ${opts.token}` }),
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: AbortSignal.timeout(opts.timeoutMs),
  });
  const text = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: text ? (JSON.parse(text) as Record<string, unknown>) : null,
    ms: performance.now() - started,
  };
}
