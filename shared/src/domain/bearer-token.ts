// The characters of a bearer token (RFC 6750 §2.1, b64token): what the API's authenticator accepts, so
// every client (CLI, lease client, gateway worker) refuses a token the API could never take — before
// sending it, and without quoting it (fetch's own refusal of a header value quotes the whole value).
export const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
