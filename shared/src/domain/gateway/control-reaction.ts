// What a worker does with a control-plane answer that is not a success: the "worker's reaction" column of
// docs/gateway-control-plane.md § Errors, keyed by status and stable code (never by message text). An
// unknown code falls back on its status class, so a newer controller's new code is handled sensibly.

export type ControlReaction =
  /** 400 unsupported_protocol_version: the controller does not speak our protocol; do not start. */
  | 'fatal'
  /** 400 invalid_*: a bug on our side; log it and drop that message. */
  | 'drop'
  /** 401: get a fresh identity token, retry with backoff. */
  | 'reauthenticate'
  /** 403: a configuration error; log loudly, retry slowly. */
  | 'retry_slowly'
  /** 409 unknown_worker / stale_session / session_expired: register again, then resynchronise. */
  | 'reregister'
  /** 409 unknown_snapshot / checksum_mismatch: GET the latest snapshot, apply it, ACK it. */
  | 'resync'
  /** 409 stale_epoch / version_regression: a newer snapshot is on its way; wait for it. */
  | 'await_snapshot'
  /** 409 no_ack / ack_bound_mismatch: ACK the applied snapshot first, then report on it. */
  | 'ack_first'
  /** 409 sequence_regression / sequence_conflict: move past that sequence number. */
  | 'skip_sequence'
  /** 404 no_snapshot: none built yet; Pub/Sub will bring it. */
  | 'no_snapshot'
  /** 413: split the batch. */
  | 'split'
  /** 429: wait Retry-After seconds. */
  | 'rate_limited'
  /** 503, other 5xx, network failures: bounded exponential backoff with jitter. */
  | 'retry';

const BY_CODE: Readonly<Record<string, ControlReaction>> = {
  unsupported_protocol_version: 'fatal',
  invalid_json: 'drop',
  invalid_request: 'drop',
  invalid_counts: 'drop',
  unauthenticated: 'reauthenticate',
  forbidden: 'retry_slowly',
  unknown_worker: 'reregister',
  stale_session: 'reregister',
  session_expired: 'reregister',
  unknown_snapshot: 'resync',
  checksum_mismatch: 'resync',
  stale_epoch: 'await_snapshot',
  version_regression: 'await_snapshot',
  no_ack: 'ack_first',
  ack_bound_mismatch: 'ack_first',
  sequence_regression: 'skip_sequence',
  sequence_conflict: 'skip_sequence',
  no_snapshot: 'no_snapshot',
  payload_too_large: 'split',
  rate_limited: 'rate_limited',
  unavailable: 'retry',
  contended: 'retry',
};

/** `status` 0 stands for a network failure or a timeout (no HTTP answer at all). */
export function controlReaction(status: number, code: string | undefined): ControlReaction {
  const known = code === undefined ? undefined : BY_CODE[code];
  if (known) return known;
  if (status === 401) return 'reauthenticate';
  if (status === 403) return 'retry_slowly';
  if (status === 413) return 'split';
  if (status === 429) return 'rate_limited';
  if (status === 404 || status === 409 || (status >= 400 && status < 500)) return 'drop';
  return 'retry';
}
