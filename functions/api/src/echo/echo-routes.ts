// GET /v1/echo — what the EGRESS probe fetches through a proxy: the address the request came from and the
// headers it carried. Unauthenticated on purpose (probes reach it through arbitrary proxies) and stateless:
// it only reflects the caller's own request back.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { clientAddress, forwardedFor, peerAddress } from '../middleware/client-address.js';
import { json, payloadTooLarge } from '../routes/openapi-responses.js';
import { noSecurity } from '../routes/openapi-security.js';

export interface EchoOptions {
  /**
   * Forwarding hops added by infrastructure we trust (Cloud Run's front end appends the client address to
   * X-Forwarded-For: 1 there, 0 when the service is reached directly). Those entries name the exit address;
   * anything before them was sent by the proxy itself, which is exactly what the leak check must see.
   */
  trustedHops: number;
  /** For tests with app.request(): the peer address when there is no socket. */
  remoteAddress?: (c: unknown) => string | undefined;
}

/** What the probe's EGRESS tier reads (parseEchoBody, shared/src/domain/health/egress.ts). */
const EchoBody = z
  .object({
    ip: z.string().openapi({ description: 'The address the request came from (the exit address)' }),
    headers: z.record(z.string(), z.string()).openapi({
      description: 'The headers it carried, names lower-case, without Authorization and Proxy-Authorization',
    }),
  })
  .openapi('Echo');

const echoRoute = createRoute({
  method: 'get',
  path: '/v1/echo',
  tags: ['probe'],
  summary: 'Reflect the caller’s address and headers (the EGRESS probe; no credential)',
  security: noSecurity,
  responses: { 200: json(EchoBody, 'The request as it arrived'), ...payloadTooLarge },
});

export function echoRoutes(opts: EchoOptions) {
  return new OpenAPIHono().openapi(echoRoute, (c) => {
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const peer = opts.remoteAddress?.(c) ?? peerAddress(c);
    // The same address the failed-authentication limit keys on (middleware/client-address.ts).
    const ip = clientAddress(headers['x-forwarded-for'], opts.trustedHops, peer) ?? '';
    const xff = forwardedFor(headers['x-forwarded-for']);
    if (opts.trustedHops > 0 && xff.length >= opts.trustedHops) {
      const sentByProxy = xff.slice(0, xff.length - opts.trustedHops);
      if (sentByProxy.length > 0) headers['x-forwarded-for'] = sentByProxy.join(', ');
      else delete headers['x-forwarded-for'];
    }
    delete headers.authorization;
    delete headers['proxy-authorization'];
    c.header('cache-control', 'no-store');
    return c.json({ ip, headers }, 200);
  });
}
