// The trace a piece of work belongs to, carried through it without being passed by hand: the API takes it
// from the request (Cloud Run's front end sends `traceparent` and `X-Cloud-Trace-Context`), a function from
// the message that triggered it (our `traceparent` attribute, else the CloudEvent's extension), and every
// log line written inside it names it in Cloud Logging's fields, so that a request and the reconcile passes
// it caused read as one trace. A message published inside it carries it on (PubSubPublisher).
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';

export interface TraceContext {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** 16 lower-case hex digits, not all zero: the span this work runs under. */
  spanId: string;
  sampled: boolean;
}

/** The message attribute (and HTTP header) a trace travels in: W3C Trace Context's `traceparent`. */
export const TRACEPARENT = 'traceparent';

const TRACEPARENT_FORM = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;

/**
 * A W3C `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header), or undefined when it is
 * not one: upper-case hex, an all-zero trace or parent id, version ff, or a version-00 value with anything
 * after its flags are all ignored, as the recommendation says.
 */
export function parseTraceparent(value: unknown): TraceContext | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT_FORM.exec(value.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

const CLOUD_TRACE_FORM = /^([0-9a-fA-F]{32})(?:\/(\d{1,20}))?(?:;o=([0-9]+))?$/;
const MAX_SPAN = (1n << 64n) - 1n;

/**
 * Google's `X-Cloud-Trace-Context: TRACE_ID/SPAN_ID;o=OPTIONS` (the span id decimal). A span id missing, zero
 * or out of range gets a fresh one: the work still belongs to the trace.
 */
export function parseCloudTraceContext(value: unknown): TraceContext | undefined {
  if (typeof value !== 'string') return undefined;
  const m = CLOUD_TRACE_FORM.exec(value.trim());
  if (!m) return undefined;
  const traceId = m[1]!.toLowerCase();
  if (ALL_ZERO.test(traceId)) return undefined;
  const span = m[2] === undefined ? 0n : BigInt(m[2]);
  const spanId = span > 0n && span <= MAX_SPAN ? span.toString(16).padStart(16, '0') : newSpanId();
  return { traceId, spanId, sampled: m[3] === '1' };
}

/** A request's trace: `traceparent` first (the standard), else `X-Cloud-Trace-Context`. */
export function traceOfHeaders(header: (name: string) => string | undefined): TraceContext | undefined {
  return parseTraceparent(header(TRACEPARENT)) ?? parseCloudTraceContext(header('x-cloud-trace-context'));
}

export function formatTraceparent(t: TraceContext): string {
  return `00-${t.traceId}-${t.spanId}-${t.sampled ? '01' : '00'}`;
}

function newSpanId(): string {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    if (!ALL_ZERO.test(id)) return id;
  }
}

const current = new AsyncLocalStorage<TraceContext>();

/** Runs `fn` inside `trace` (without one, inside whatever trace surrounds the call). */
export function runInTrace<T>(trace: TraceContext | undefined, fn: () => T): T {
  return trace ? current.run(trace, fn) : fn();
}

/**
 * Runs `fn` outside any trace: for work a request or delivery starts that outlives it (a listener, its
 * retries, an idle timer), whose lines and publishes belong to no one request — without this, everything
 * it did later would carry the trace of the request that happened to start it.
 */
export function outsideTrace<T>(fn: () => T): T {
  return current.exit(fn);
}

export function currentTrace(): TraceContext | undefined {
  return current.getStore();
}

/** Cloud Logging's trace fields (https://cloud.google.com/logging/docs/structured-logging#special-payload-fields). */
export function traceLogFields(project: string, t: TraceContext): Record<string, string | boolean> {
  return {
    'logging.googleapis.com/trace': `projects/${project}/traces/${t.traceId}`,
    'logging.googleapis.com/spanId': t.spanId,
    'logging.googleapis.com/trace_sampled': t.sampled,
  };
}
