import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decodePubSubCloudEvent } from './decode-push.js';

const Payload = z.object({ proxy: z.string().min(1), n: z.number().int() }).strict();
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

// The CloudEvent the functions-framework builds from an emulator push (captured, recipes §1).
const event = (message: Record<string, unknown>) => ({
  specversion: '1.0',
  id: '7',
  type: 'google.cloud.pubsub.topic.v1.messagePublished',
  source: '//pubsub.googleapis.com/projects/demo/topics/t',
  data: { message: { '@type': 'type.googleapis.com/google.pubsub.v1.PubsubMessage', ...message } },
});

describe('decodePubSubCloudEvent', () => {
  it('decodes a valid payload with its id, attributes and publish time', () => {
    const ce = event({
      data: b64('{"proxy":"p-1","n":3}'),
      attributes: { k: 'v' },
      messageId: '7',
      publishTime: '2026-01-01T00:00:00.000Z',
    });
    expect(decodePubSubCloudEvent(ce, Payload)).toEqual({
      ok: true,
      value: { proxy: 'p-1', n: 3 },
      messageId: '7',
      attributes: { k: 'v' },
      publishTime: '2026-01-01T00:00:00.000Z',
    });
  });

  it('decodes the binary-mode event Eventarc sends (data.subscription present)', () => {
    const ce = {
      ...event({}),
      data: {
        subscription: 'projects/p/subscriptions/s',
        message: { data: b64('{"proxy":"a","n":1}'), messageId: 'm' },
      },
    };
    const out = decodePubSubCloudEvent(ce, Payload);
    expect(out.ok && out.value).toEqual({ proxy: 'a', n: 1 });
  });

  it.each([
    ['no data field', event({ messageId: '1', attributes: { a: 'b' } }), 'missing_data'],
    ['empty data', event({ data: '', messageId: '1' }), 'missing_data'],
    [
      'raw push body (framework did not convert it)',
      { subscription: 's', message: { messageId: '1', attributes: { a: 'b' } } },
      'missing_data',
    ],
    ['no message at all', { specversion: '1.0', data: {} }, 'missing_data'],
    ['not an object', 'hello', 'missing_data'],
    ['null', null, 'missing_data'],
    ['data not base64', event({ data: 'not base64!!', messageId: '1' }), 'bad_base64'],
    ['base64 with bad padding', event({ data: 'abc', messageId: '1' }), 'bad_base64'],
    ['base64 of non-JSON', event({ data: b64('hello'), messageId: '1' }), 'bad_json'],
    [
      'base64 of invalid UTF-8',
      event({ data: Buffer.from([0xff, 0xfe, 0x7b]).toString('base64'), messageId: '1' }),
      'bad_json',
    ],
    ['JSON of the wrong shape', event({ data: b64('{"proxy":"p"}'), messageId: '1' }), 'schema'],
    [
      'JSON with extra keys (strict schema)',
      event({ data: b64('{"proxy":"p","n":1,"x":0}'), messageId: '1' }),
      'schema',
    ],
    ['JSON array', event({ data: b64('[1,2]'), messageId: '1' }), 'schema'],
  ])('%s → ok:false with kind %s', (_name, ce, kind) => {
    const out = decodePubSubCloudEvent(ce, Payload);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.error.kind).toBe(kind);
  });

  it('keeps the message id and attributes of a poison message, for the log line', () => {
    const out = decodePubSubCloudEvent(
      event({ data: b64('nope'), messageId: '42', attributes: { k: 'v', n: 1 } }),
      Payload,
    );
    expect(out).toMatchObject({ ok: false, messageId: '42', attributes: { k: 'v' } });
  });

  it('returns the schema issues as the cause', () => {
    const out = decodePubSubCloudEvent(event({ data: b64('{"proxy":"","n":1}'), messageId: '1' }), Payload);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.error.cause).toEqual([expect.objectContaining({ path: ['proxy'] })]);
  });
});
