// Google API errors as Secret Manager returns them over REST: {"error":{"code","message","status"}} with the
// HTTP status of the canonical code (https://cloud.google.com/apis/design/errors#handling_errors).
// FAILED_PRECONDITION is HTTP 400 like INVALID_ARGUMENT: clients tell them apart by `status`.
export type Canonical =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'RESOURCE_EXHAUSTED'
  | 'INTERNAL'
  | 'UNIMPLEMENTED'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED';

export const HTTP_STATUS: Record<Canonical, number> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNIMPLEMENTED: 501,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

export class ApiError extends Error {
  constructor(
    readonly status: Canonical,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get httpStatus(): number {
    return HTTP_STATUS[this.status];
  }

  toBody(): { error: { code: number; message: string; status: Canonical } } {
    return { error: { code: this.httpStatus, message: this.message, status: this.status } };
  }
}

export const invalidArgument = (message: string) => new ApiError('INVALID_ARGUMENT', message);
export const failedPrecondition = (message: string) => new ApiError('FAILED_PRECONDITION', message);
export const notFound = (message: string) => new ApiError('NOT_FOUND', message);
export const alreadyExists = (message: string) => new ApiError('ALREADY_EXISTS', message);

/** GCP's wording: the "(or it may not exist)" is why a denial is checked before existence. */
export const permissionDenied = (permission: string, resource: string) =>
  new ApiError(
    'PERMISSION_DENIED',
    `Permission '${permission}' denied for resource '${resource}' (or it may not exist).`,
  );
