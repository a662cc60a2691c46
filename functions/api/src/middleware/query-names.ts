// Checks the names in the raw query string before the route's zod validator sees the parsed query. Hono's
// parser drops some names on the way (`__proto__`, an empty name as in `?=x`), so a schema that refuses
// unknown parameters never learns they were sent: `GET /v1/proxies?__proto__=1` answered the whole list.
// A name given twice is refused here too, whatever its values, instead of depending on how the parser
// folds repeats into arrays.
import { createMiddleware } from 'hono/factory';
import { type Issue, invalidRequest } from '../errors.js';
import { joinPath } from '../validation/issues.js';

const MAX_ISSUES = 20;

export const queryNames = (allowed: (name: string) => boolean, hint: string) =>
  createMiddleware(async (c, next) => {
    const at = c.req.url.indexOf('?');
    if (at >= 0) {
      const seen = new Set<string>();
      const issues: Issue[] = [];
      for (const name of new URLSearchParams(c.req.url.slice(at + 1)).keys()) {
        if (!allowed(name)) {
          issues.push({
            path: joinPath([name]),
            code: 'custom',
            message: `unknown query parameter (${hint})`,
          });
        } else if (seen.has(name)) {
          issues.push({ path: joinPath([name]), code: 'custom', message: 'given more than once' });
        }
        seen.add(name);
      }
      if (issues.length > 0) throw invalidRequest('invalid query string', issues.slice(0, MAX_ISSUES));
    }
    await next();
  });
