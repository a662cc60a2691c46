// `If-Match` (RFC 9110 §13.1.1) as a request header schema: `*` or a list of entity tags (admin/if-match.ts
// parses it). Malformed → 400 invalid_request at `If-Match` (the validator matches header names
// case-insensitively). One per resource that takes it: a proxy (its generation), the routing (its revision).
import { z } from '@hono/zod-openapi';
import { parseIfMatch } from '../admin/if-match.js';

export const ifMatchHeader = (what: { example: string; description: string }) =>
  z.object({
    'If-Match': z
      .string()
      .refine((v) => parseIfMatch(v) !== null, {
        message: `If-Match must be * or a list of entity tags separated by commas, e.g. ${what.example} (the quotes are part of it)`,
        params: { issue: 'invalid_if_match' },
      })
      .optional()
      .openapi({
        param: { name: 'If-Match', in: 'header' },
        description: what.description,
        example: what.example,
      }),
  });
