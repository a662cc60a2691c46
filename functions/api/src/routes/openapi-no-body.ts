// The answers of a route that takes no body and bounds its own (the gateway, worker and fleet GETs skip the
// app's 64 KiB limit, app.ts): a body is refused, not ignored (middleware/no-body.ts), after a 1 KiB bound.
import { error } from './openapi-responses.js';

/**
 * 400 invalid_request with an unexpected_body issue (`other`: the route's other 400s, if any), and 413 for
 * a body over 1 KiB.
 */
export const refusesBody = (other?: string) => ({
  400: error(`invalid_request: a body (unexpected_body)${other ? `, ${other}` : ''}`),
  413: error('payload_too_large: the body is over 1 KiB; the connection is closed'),
});
