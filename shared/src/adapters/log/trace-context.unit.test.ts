import { describe, expect, it } from 'vitest';
import { inDeliveryTrace, traceOfDelivery } from '../pubsub/decode-push.js';
import { memoryLogger } from './json-logger.js';
import {
  currentTrace,
  formatTraceparent,
  parseCloudTraceContext,
  parseTraceparent,
  runInTrace,
  traceOfHeaders,
} from './trace-context.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceparent (W3C Trace Context)', () => {
  it('reads a version-00 value, its sampled flag, and writes it back as it came', () => {
    const t = parseTraceparent(`00-${TRACE}-${SPAN}-01`);
    expect(t).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(formatTraceparent(t!)).toBe(`00-${TRACE}-${SPAN}-01`);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.sampled).toBe(false);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true);
    // A later version may carry more after its flags; its first four fields are read.
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-whatever`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
  });

  it.each([
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more after its flags', `00-${TRACE}-${SPAN}-01-extra`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['no flags', `00-${TRACE}-${SPAN}`],
    ['not a string', 42],
    ['nothing', undefined],
  ])('ignores %s', (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('parseCloudTraceContext (X-Cloud-Trace-Context)', () => {
  it('reads the trace, the decimal span as 16 hex digits, and o=1 as sampled', () => {
    expect(parseCloudTraceContext(`${TRACE}/1;o=1`)).toEqual({
      traceId: TRACE,
      spanId: '0000000000000001',
      sampled: true,
    });
    expect(parseCloudTraceContext(`${TRACE.toUpperCase()}/18446744073709551615;o=0`)).toEqual({
      traceId: TRACE,
      spanId: 'ffffffffffffffff',
      sampled: false,
    });
  });

  it('gives a span of its own when none, zero or one out of range came', () => {
    for (const value of [TRACE, `${TRACE}/0;o=1`, `${TRACE}/18446744073709551616`]) {
      const t = parseCloudTraceContext(value);
      expect(t?.traceId).toBe(TRACE);
      expect(t?.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(t?.spanId).not.toBe('0'.repeat(16));
    }
  });

  it.each(['abc', `${'0'.repeat(32)}/1;o=1`, `${TRACE}/x`, `${TRACE}/1;o=1;extra`])('ignores %s', (value) => {
    expect(parseCloudTraceContext(value)).toBeUndefined();
  });

  it('is read only when no valid traceparent came', () => {
    const headers = (h: Record<string, string>) => (name: string) => h[name];
    const cloud = `${TRACE}/1;o=1`;
    const other = 'fedcba9876543210fedcba9876543210';
    expect(
      traceOfHeaders(headers({ traceparent: `00-${other}-${SPAN}-01`, 'x-cloud-trace-context': cloud }))
        ?.traceId,
    ).toBe(other);
    expect(traceOfHeaders(headers({ traceparent: 'garbage', 'x-cloud-trace-context': cloud }))?.traceId).toBe(
      TRACE,
    );
    expect(traceOfHeaders(headers({}))).toBeUndefined();
  });
});

describe('the current trace', () => {
  it('follows the work across awaits, and the logger names it only with a project', async () => {
    const t = parseTraceparent(`00-${TRACE}-${SPAN}-01`)!;
    const traced = memoryLogger({ traceProject: 'p' });
    const plain = memoryLogger();
    await runInTrace(t, async () => {
      await new Promise((r) => setTimeout(r, 1));
      expect(currentTrace()).toEqual(t);
      traced.child({ proxy: 'a' }).info('inside');
      plain.info('inside');
    });
    traced.info('outside');
    expect(currentTrace()).toBeUndefined();
    expect(traced.lines[0]).toMatchObject({
      message: 'inside',
      proxy: 'a',
      'logging.googleapis.com/trace': `projects/p/traces/${TRACE}`,
      'logging.googleapis.com/spanId': SPAN,
      'logging.googleapis.com/trace_sampled': true,
    });
    expect(traced.lines[1]).not.toHaveProperty('logging.googleapis.com/trace');
    expect(plain.lines[0]).not.toHaveProperty('logging.googleapis.com/trace');
  });

  it("is a delivery's message attribute first, else its CloudEvent extension", () => {
    const other = 'fedcba9876543210fedcba9876543210';
    const event = (attributes: Record<string, unknown>, extension?: string) => ({
      ...(extension === undefined ? {} : { traceparent: extension }),
      data: { message: { data: 'e30=', attributes, messageId: '1' } },
    });
    expect(
      traceOfDelivery(event({ traceparent: `00-${TRACE}-${SPAN}-01` }, `00-${other}-${SPAN}-01`))?.traceId,
    ).toBe(TRACE);
    expect(traceOfDelivery(event({ traceparent: 'garbage' }, `00-${other}-${SPAN}-01`))?.traceId).toBe(other);
    expect(traceOfDelivery(event({ traceparent: 7 }))).toBeUndefined();
    expect(traceOfDelivery(null)).toBeUndefined();
    expect(
      inDeliveryTrace(event({ traceparent: `00-${TRACE}-${SPAN}-00` }), () => currentTrace()?.sampled),
    ).toBe(false);
    expect(inDeliveryTrace(event({}), () => currentTrace())).toBeUndefined();
  });
});
