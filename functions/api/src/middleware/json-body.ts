// Reads a JSON request body before the route's zod validator does, so that each way a body can be wrong
// gets its own stable code: 415 for another media type, 400 invalid_json for empty or unparsable bytes,
// 400 invalid_request for depth, forbidden keys and a key repeated in one object. The text stays in Hono's
// body cache, so the validator that follows parses the same bytes without reading the stream again. A
// Content-Type it accepts is handed on as its bare media type: the OpenAPI route's own media-type gate
// (@hono/zod-openapi) matches a stricter pattern than RFC 9110's (no space before ";", no empty
// parameter), and refused with a bare 415 what this middleware had accepted.
import { createMiddleware } from 'hono/factory';
import {
  DUPLICATE_KEY_MESSAGE,
  type DuplicateKey,
  findDuplicateKey,
} from '../../../../shared/src/domain/duplicate-keys.js';
import { ApiError, type Issue, invalidRequest } from '../errors.js';
import { joinPath } from '../validation/issues.js';
import { inspectJson, MAX_JSON_DEPTH } from '../validation/json-guard.js';

/** The WHATWG Encoding Standard's labels of UTF-8 (https://encoding.spec.whatwg.org/#names-and-labels). */
const UTF8_LABELS = new Set([
  'utf-8',
  'utf8',
  'unicode-1-1-utf-8',
  'unicode11utf8',
  'unicode20utf8',
  'x-unicode20utf8',
]);

/** The issue of a repeated key: its path, not its value (which of the two did the caller mean?). */
export const duplicateKeyIssue = ({ path }: DuplicateKey): Issue => ({
  path: joinPath(path),
  code: 'duplicate_key',
  message: DUPLICATE_KEY_MESSAGE,
});

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
    if (charset && !UTF8_LABELS.has(charset.replace(/^charset=/, '').replace(/"/g, ''))) {
      throw new ApiError(415, 'unsupported_media_type', 'JSON bodies must be UTF-8');
    }
    // RFC 9110 §8.3.1 allows `application/json ; charset=utf-8` and `application/json;`: accepted above, so
    // the route's validator sees the media type alone (it would refuse them with a bare 415).
    if (c.req.header('content-type') !== mediaType) c.req.raw.headers.set('content-type', mediaType);
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
    // JSON.parse keeps the last of a repeated key: the body would act on a value its sender may not have read.
    const duplicate = findDuplicateKey(text);
    if (duplicate) throw invalidRequest('invalid request body', [duplicateKeyIssue(duplicate)]);
    await next();
  });
