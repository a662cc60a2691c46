import { describe, expect, it } from 'vitest';
import { controlReaction } from './control-reaction.js';

describe('controlReaction (docs/gateway-control-plane.md § Errors)', () => {
  it.each([
    [400, 'unsupported_protocol_version', 'fatal'],
    [400, 'invalid_json', 'drop'],
    [400, 'invalid_request', 'drop'],
    [400, 'invalid_counts', 'drop'],
    [401, 'unauthenticated', 'reauthenticate'],
    [403, 'forbidden', 'retry_slowly'],
    [409, 'unknown_worker', 'reregister'],
    [409, 'stale_session', 'reregister'],
    [409, 'session_expired', 'reregister'],
    [409, 'unknown_snapshot', 'resync'],
    [409, 'checksum_mismatch', 'resync'],
    [409, 'stale_epoch', 'await_snapshot'],
    [409, 'version_regression', 'await_snapshot'],
    [409, 'no_ack', 'ack_first'],
    [409, 'ack_bound_mismatch', 'ack_first'],
    [409, 'sequence_regression', 'skip_sequence'],
    [409, 'sequence_conflict', 'skip_sequence'],
    [404, 'no_snapshot', 'no_snapshot'],
    [413, 'payload_too_large', 'split'],
    [429, 'rate_limited', 'rate_limited'],
    [503, 'unavailable', 'retry'],
    [503, 'contended', 'retry'],
  ] as const)('%i %s → %s', (status, code, reaction) => {
    expect(controlReaction(status, code)).toBe(reaction);
  });

  it.each([
    [0, undefined, 'retry'],
    [500, 'internal', 'retry'],
    [502, undefined, 'retry'],
    [401, undefined, 'reauthenticate'],
    [403, 'something_new', 'retry_slowly'],
    [413, undefined, 'split'],
    [429, undefined, 'rate_limited'],
    [409, 'a_newer_rule', 'drop'],
    [404, 'not_found', 'drop'],
  ] as const)('unknown answer %i %s falls back on its status class → %s', (status, code, reaction) => {
    expect(controlReaction(status, code)).toBe(reaction);
  });
});
