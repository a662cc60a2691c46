// Errors in the exact JSON GCE sends (`{"error":{"code","message","errors":[{message,domain,reason}]}}`);
// @google-cloud/compute 6.x surfaces them as a GaxiosError whose `code` is the HTTP status and whose
// message is this body (../shared/design/gcp-offline-recipes.md §3), so callers classify by status and
// `errors[0].reason`. Messages follow GCE's wording where it is known.

export interface GceErrorItem {
  message: string;
  domain: string;
  reason: string;
}

export class GceError extends Error {
  readonly kind = 'gce';
  constructor(
    readonly code: number,
    message: string,
    readonly errors: GceErrorItem[] = [{ message, domain: 'global', reason: 'invalid' }],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toBody(): { error: { code: number; message: string; errors: GceErrorItem[] } } {
    return { error: { code: this.code, message: this.message, errors: this.errors } };
  }
}

const single = (code: number, message: string, reason: string, domain = 'global') =>
  new GceError(code, message, [{ message, domain, reason }]);

export const notFound = (resourcePath: string) =>
  single(404, `The resource '${resourcePath}' was not found`, 'notFound');

export const alreadyExists = (resourcePath: string) =>
  single(409, `The resource '${resourcePath}' already exists`, 'alreadyExists');

export const resourceNotReady = (resourcePath: string) =>
  single(400, `The resource '${resourcePath}' is not ready`, 'resourceNotReady');

export const quotaExceeded = (message: string) => single(403, message, 'quotaExceeded', 'usageLimits');

export const invalidField = (field: string, value: string, detail: string) =>
  single(400, `Invalid value for field '${field}': '${value}'. ${detail}`, 'invalid');

export const requiredField = (field: string) =>
  single(400, `Required field '${field}' not specified`, 'required');

export const badRequest = (message: string) => single(400, message, 'badRequest');

export const backendError = (code: number) =>
  single(code, 'Internal error. Please try again or contact Google Support.', 'backendError');

/**
 * What GCE answers with an injected status: a 5xx is `backendError`; a 403 or 429 is the API rate limit
 * (`rateLimitExceeded`, domain `usageLimits`:
 * https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-bulk-vm-creation).
 */
export function injectedError(code: number): GceError {
  if (code === 403 || code === 429) {
    return single(
      code,
      "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute per region' of service 'compute.googleapis.com'.",
      'rateLimitExceeded',
      'usageLimits',
    );
  }
  return backendError(code);
}

export const urlNotFound = (path: string) =>
  single(404, `The requested URL ${path} was not found on this server.`, 'notFound');

export const methodNotAllowed = (method: string, path: string, allowed: string[]) =>
  new GceError(
    405,
    `Method ${method} is not allowed for ${path}`,
    [
      {
        message: `Method ${method} is not allowed for ${path}`,
        domain: 'global',
        reason: 'httpMethodNotAllowed',
      },
    ],
    { Allow: allowed.join(', ') },
  );

/** Several validation failures in one response, as GCE reports them (first one is the message). */
export function combine(errors: GceError[]): GceError {
  if (errors.length === 1) return errors[0]!;
  return new GceError(
    errors[0]!.code,
    errors[0]!.message,
    errors.flatMap((e) => e.errors),
  );
}

export const RESOURCE_NAME = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
export const RESOURCE_NAME_REGEX_TEXT = '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)';
/** Path parameters accept a name or a numeric id. */
export const NAME_OR_ID = /^(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19})$/;
export const NAME_OR_ID_REGEX_TEXT = '[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19}';
