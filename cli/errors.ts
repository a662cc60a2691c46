// The CLI's failures, by exit code: 2 for a usage or local-input mistake (nothing was sent), 1 for an
// answer of the API that is not a success (or no answer at all). Each carries the stable code it prints.
import type { z } from 'zod';

export class UsageError extends Error {
  readonly kind = 'usage';
  readonly exitCode = 2;
}

/** A failure that lists what is wrong, one line each ("WHERE: why"), below its message. */
abstract class DetailedError extends Error {
  constructor(
    message: string,
    readonly details: string[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A file or flag value that is well-formed as a command line but not as input (a bad -f file). */
export class InputError extends DetailedError {
  readonly kind = 'input';
  readonly exitCode = 2;
}

/**
 * A file saved from the API's output (its `uid` and `generation`) whose proxy has changed since: `proxies
 * apply` writes nothing over it, as the API's 412 would refuse it (code `precondition_failed`, exit 1).
 */
export class StaleFileError extends DetailedError {
  readonly kind = 'stale';
  readonly exitCode = 1;
}

/**
 * A 2xx answer this CLI cannot read: not the schema the API publishes for the route (a version skew, a
 * proxy or page answering in its stead). `details` are the schema's issues ("WHERE: why"); code
 * `bad_response`, exit 1.
 */
export class BadResponseError extends DetailedError {
  readonly kind = 'bad_response';
  readonly exitCode = 1;
}

/** The issues listed for an answer that does not fit: enough to see what is off, not a screenful. */
const MAX_ISSUES = 10;

/**
 * `body` checked against the schema the API publishes for it (it was only cast: a 2xx of another shape —
 * an API of another release, a proxy or page answering in its stead — printed `undefined` and exited 0):
 * the parsed answer, or BadResponseError saying it is not `what` this CLI reads, with its issues.
 */
export function readAnswer<S extends z.ZodTypeAny>(schema: S, body: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
  const more = issues.length > MAX_ISSUES ? [`… ${issues.length - MAX_ISSUES} more`] : [];
  throw new BadResponseError(`the API's answer to ${what} (client and service versions differ?)`, [
    ...issues.slice(0, MAX_ISSUES),
    ...more,
  ]);
}

/** A non-2xx answer: `code` is the API's `error` field (its stable code), `body` the parsed answer. */
/** Whether an API error is its catch-all 404 (its app.ts answers "no such route"): an API older than the route. */
export const routeMissing = (code: string, body: unknown): boolean =>
  code === 'not_found' && (body as { message?: unknown } | null)?.message === 'no such route';

export class ApiCallError extends Error {
  readonly kind = 'api';
  readonly exitCode = 1;
  constructor(
    readonly status: number,
    readonly code: string,
    readonly body: unknown,
    /** The route called (no query), so a hint can say what was not found. */
    readonly path = '',
    /** Answered to the call's retry after a 503: the first attempt may have done it all the same. */
    readonly retried = false,
    /** Where the token sent came from (config.ts resolveToken's `source`; 'none': no token was sent). */
    readonly tokenSource = 'none',
  ) {
    super(`HTTP ${status} ${code}`);
  }
}

/** The API could not be reached (connection refused, DNS, timeout): code `unreachable`. */
export class UnreachableError extends Error {
  readonly kind = 'unreachable';
  readonly exitCode = 1;
  constructor(
    readonly url: string,
    options: { cause: unknown },
  ) {
    super(`cannot reach ${url}`, options);
  }
}

/**
 * A failure part-way through a command that works on several proxies (`proxies apply`): `failure` is
 * described as it would be on its own (code, hint, issues; its exit code), then `notes` say what was done
 * before it and what was not sent.
 */
export class PartialError extends Error {
  readonly kind = 'partial';
  constructor(
    readonly failure: unknown,
    readonly notes: string[],
  ) {
    super(failure instanceof Error ? failure.message : String(failure), { cause: failure });
  }
}
