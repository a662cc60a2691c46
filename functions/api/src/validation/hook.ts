// The defaultHook of every OpenAPI route: a failed zod validation of the body, query or path becomes
// 400 invalid_request with the field paths. Thrown (not returned) so that recover() renders every error
// the same way.
import type { Hook } from '@hono/zod-openapi';
import { invalidRequest } from '../errors.js';
import { toIssues } from './issues.js';

const label: Record<string, string> = {
  json: 'request body',
  query: 'query string',
  param: 'path parameter',
  header: 'request header',
};

/** The message of a failed validation of `target` (json, query, param): the same on every route. */
export const invalidInputMessage = (target: string) => `invalid ${label[target] ?? target}`;

// biome-ignore lint/suspicious/noExplicitAny: one hook serves routes of every input and env type
export const validationHook: Hook<any, any, any, void> = (result) => {
  if (!result.success) {
    throw invalidRequest(invalidInputMessage(result.target), toIssues(result.error));
  }
};
