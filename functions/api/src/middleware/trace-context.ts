// The request's trace (`traceparent`, else `X-Cloud-Trace-Context`: Cloud Run's front end sends both) made
// the trace of everything the request does: its log lines carry it (the logger's traceProject), and the
// reconcile requests it publishes carry it on to the passes they trigger (PubSubPublisher).
import { createMiddleware } from 'hono/factory';
import { runInTrace, traceOfHeaders } from '../../../../shared/src/adapters/log/trace-context.js';

export const traceContext = () =>
  createMiddleware((c, next) =>
    runInTrace(
      traceOfHeaders((name) => c.req.header(name)),
      next,
    ),
  );
