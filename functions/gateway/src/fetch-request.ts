// The body of POST /v1/fetch: what to fetch through the fleet. Limits are part of the schema so a bad
// request is a 400 with the zod issues, never an exception deeper down.
import { z } from 'zod';
import { looksLikeFraming } from './head.js';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEADERS = 100;
const MAX_HEADER_BYTES = 32 * 1024;

export const FetchRequest = z
  .object({
    url: z
      .string()
      .max(8192)
      .refine((u) => /^https?:\/\//i.test(u), 'an http:// or https:// URL'),
    method: z
      .string()
      .regex(TOKEN)
      .max(16)
      // Node upper-cases a method: a CONNECT in any case would ask the upstream (in absolute form) for a
      // tunnel to whatever it makes of "http://host/path", not to the address the guard checked.
      .refine((m) => m.toUpperCase() !== 'CONNECT', 'not CONNECT: a fetch is one request')
      // A proxy that answers a TRACE itself (RFC 9110 §7.6.2, Max-Forwards: 0) echoes the request it got,
      // our Proxy-Authorization for it included on the absolute-form path unless it masks it (squid
      // does); a crawler has no use for TRACE (or TRACK, its IIS spelling).
      .refine((m) => !/^trac[ek]$/i.test(m), 'not TRACE: its echo could carry the upstream credentials')
      .default('GET'),
    headers: z
      .record(
        z.string().regex(TOKEN).max(256),
        z
          .string()
          // A field value as Node puts it on the wire (RFC 9110 §5.5: VCHAR, obs-text, SP, HTAB): anything
          // else http.request refuses (ERR_INVALID_CHAR) after an upstream slot and a tunnel were taken.
          .regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'visible characters, spaces and tabs only')
          .max(8192),
      )
      .default({})
      .refine((h) => Object.keys(h).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`)
      .refine(
        (h) => !Object.keys(h).some((k) => looksLikeFraming(k.toLowerCase())),
        "no Content_Length or Transfer_Encoding spelt with '_' (a server behind may read it as the real one)",
      )
      .refine(
        (h) => Object.entries(h).reduce((n, [k, v]) => n + k.length + v.length + 4, 0) <= MAX_HEADER_BYTES,
        `headers total at most ${MAX_HEADER_BYTES} bytes`,
      ),
    body: z.string().optional(),
    bodyEncoding: z.enum(['utf8', 'base64']).default('utf8'),
    /** Bounded by GATEWAY_FETCH_TIMEOUT_MS. */
    timeoutMs: z.number().int().min(100).optional(),
  })
  .strict();
export type FetchRequest = z.infer<typeof FetchRequest>;

// Never forwarded to the target: hop-by-hop headers, and what the gateway decides itself.
export const DROPPED_REQUEST_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

// Never relayed to the client: hop-by-hop headers, and Content-Length — the body goes chunked
// (fetch-handler.ts relay).
export const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
]);

// Response fields that hold one value (RFC 9110 §5.3: only list-valued fields may be joined with ", "):
// a repeat keeps the first, as Node's own parser does for these (and for Date, whose join no parser reads).
export const SINGLE_VALUE_FIELDS = new Set([
  'age',
  'content-type',
  'date',
  'etag',
  'expires',
  'last-modified',
  'location',
  'retry-after',
  'server',
]);
