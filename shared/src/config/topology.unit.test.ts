import { describe, expect, it } from 'vitest';
import { loadFunctionTable, loadPubSubTable } from './topology.js';

// A push subscription's ack deadline is also its push request timeout: shorter than the consuming
// function's timeout, a pass that outlives it is redelivered while it still runs (docs/operations.md).
describe('topology tables', () => {
  const topics = loadPubSubTable().topics;
  const functions = Object.entries(loadFunctionTable().functions);

  it.each(functions)('%s: its trigger topic exists and its ack deadline covers the timeout', (_, fn) => {
    const topic = topics[fn.topic];
    expect(topic).toBeDefined();
    expect(topic!.ackDeadlineSeconds).toBeGreaterThanOrEqual(fn.timeoutSeconds);
    expect(topic!.ackDeadlineSeconds).toBeLessThanOrEqual(600);
  });
});
