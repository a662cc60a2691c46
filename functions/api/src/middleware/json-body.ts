// Reads a JSON request body before the route's zod validator does, so that each way a body can be wrong
// gets its own stable code: 415 for another media type, 400 invalid_json for empty or unparsable bytes,
// 400 invalid_request for depth and forbidden keys. The text stays in Hono's body cache, so the validator
// that follows parses the same bytes without reading the stream again.
import { createMiddleware } from 'hono/factory';
import { ApiError, invalidRequest } from '../errors.js';
import { inspectJson, MAX_JSON_DEPTH } from '../validation/json-guard.js';

export interface JsonBodyOptions {
  /** Accepted media types (essence only, lower case). */
  mediaTypes?: string[];
  maxDepth?: number;
}

export const jsonBody = ({
  mediaTypes = ['application/json'],
  maxDepth = MAX_JSON_DEPTH,
}: JsonBodyOptions = {}) =>
  createMiddleware(async (c, next) => {
    const [essence = '', ...params] = (c.req.header('content-type') ?? '').split(';');
    const mediaType = essence.trim().toLowerCase();
    if (!mediaTypes.includes(mediaType)) {
      throw new ApiError(415, 'unsupported_media_type', `Content-Type must be ${mediaTypes.join(' or ')}`);
    }
    // RFC 8259 §8.1: JSON exchanged between systems is UTF-8; any other declared charset is refused.
    const charset = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('charset='));
    if (charset && charset.replace(/^charset=/, '').replace(/"/g, '') !== 'utf-8') {
      throw new ApiError(415, 'unsupported_media_type', 'JSON bodies must be UTF-8');
    }
    const text = await c.req.text();
    if (text.trim() === '') throw new ApiError(400, 'invalid_json', 'the request body is empty');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new ApiError(400, 'invalid_json', 'the request body is not valid JSON', {}, { cause });
    }
    const problem = inspectJson(value, maxDepth);
    if (problem) throw invalidRequest('invalid request body', [problem]);
    await next();
  });
