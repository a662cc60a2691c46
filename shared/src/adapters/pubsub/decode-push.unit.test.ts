import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ReceivedSnapshotTopicPayload } from '../../messages/worker-snapshot-request.js';
import { memoryLogger } from '../log/json-logger.js';
import { decodePubSubCloudEvent, logUnknownFields, poisonFields } from './decode-push.js';

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
      unknownFields: [],
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

describe('poisonFields: what the poison line says', () => {
  const refused = (data: string) => {
    const out = decodePubSubCloudEvent(event({ data: b64(data), messageId: '9' }), Payload);
    if (out.ok) throw new Error('decoded');
    return poisonFields(out);
  };

  it('names each failing field and how it failed, never the value sent', () => {
    const fields = refused('{"proxy":"","n":"s3cret-ish","extra":"hunter2"}');
    expect(fields).toEqual({
      error: 'schema',
      issues: [
        expect.stringMatching(/^proxy: .*>=1 characters/),
        expect.stringMatching(/^n: .*expected number, received string/),
        expect.stringMatching(/^\(message\): Unrecognized key: "extra"/),
      ],
      issueCount: 3,
      messageId: '9',
    });
    expect(JSON.stringify(fields)).not.toMatch(/s3cret|hunter2/);
  });

  it('names at most ten issues, each cut to 200 characters, and counts them all', () => {
    const Wide = z.object(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i}`, z.string()])));
    const out = decodePubSubCloudEvent(event({ data: b64('{}'), messageId: '9' }), Wide);
    if (out.ok) throw new Error('decoded');
    const fields = poisonFields(out) as { issues: string[]; issueCount: number };
    expect(fields.issues).toHaveLength(10);
    expect(fields.issueCount).toBe(12);
    const Long = z.object({ a: z.string().refine(() => false, { message: 'x'.repeat(500) }) });
    const long = decodePubSubCloudEvent(event({ data: b64('{"a":"b"}') }), Long);
    if (long.ok) throw new Error('decoded');
    expect((poisonFields(long) as { issues: string[] }).issues[0]).toHaveLength(200);
  });

  it("names what each form of a union refused (the snapshot topic's: a tick or a worker's request)", () => {
    const out = decodePubSubCloudEvent(
      event({ data: b64('{"reson":"admin"}'), messageId: '9' }),
      ReceivedSnapshotTopicPayload,
    );
    if (out.ok) throw new Error('decoded');
    expect(poisonFields(out)).toEqual({
      error: 'schema',
      issues: [
        expect.stringMatching(/^\[form 1\] job: .*expected string/),
        expect.stringMatching(/^\[form 2\] reason: .*expected string/),
      ],
      issueCount: 2,
      messageId: '9',
    });
  });

  it('says only the kind of a message that is no JSON (its text is not quoted)', () => {
    expect(refused('{"proxy": hunter2')).toEqual({ error: 'bad_json', messageId: '9' });
  });
});

describe('fields a received schema does not know', () => {
  const Received = z.object({ proxy: z.string().min(1), n: z.number().int() });

  it('names the top-level fields a stripping schema dropped, sorted, and not those it kept', () => {
    const out = decodePubSubCloudEvent(
      event({
        data: b64('{"zeta":{"a":1},"proxy":"p","n":1,"alpha":"secret-ish","constructor":0}'),
        messageId: '1',
      }),
      Received,
    );
    expect(out).toMatchObject({
      ok: true,
      value: { proxy: 'p', n: 1 },
      unknownFields: ['alpha', 'constructor', 'zeta'],
    });
  });

  it('names none when there are none, or when the payload is not an object', () => {
    const plain = decodePubSubCloudEvent(event({ data: b64('{"proxy":"p","n":1}') }), Received);
    expect(plain.ok && plain.unknownFields).toEqual([]);
    const any = decodePubSubCloudEvent(event({ data: b64('[1,2]') }), z.unknown());
    expect(any.ok && any.unknownFields).toEqual([]);
  });

  it('logs them once at WARNING, by name, never by value', () => {
    const log = memoryLogger();
    const out = decodePubSubCloudEvent(
      event({ data: b64('{"proxy":"p","n":1,"token":"hunter2"}'), messageId: 'm7' }),
      Received,
    );
    logUnknownFields(log, out, 'reconcile-requests');
    expect(log.lines).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        event: 'pubsub.unknown_fields',
        topic: 'reconcile-requests',
        fields: ['token'],
        fieldCount: 1,
        messageId: 'm7',
      }),
    ]);
    expect(JSON.stringify(log.lines)).not.toContain('hunter2');
  });

  it('logs nothing for a message with no such field, or one that failed', () => {
    const log = memoryLogger();
    logUnknownFields(log, decodePubSubCloudEvent(event({ data: b64('{"proxy":"p","n":1}') }), Received), 't');
    logUnknownFields(log, decodePubSubCloudEvent(event({ data: b64('{"x":1}') }), Received), 't');
    expect(log.lines).toEqual([]);
  });

  it('bounds what one line repeats of a payload with very many or very long names', () => {
    const log = memoryLogger();
    const payload = {
      proxy: 'p',
      n: 1,
      ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}${'x'.repeat(100)}`, i])),
    };
    logUnknownFields(
      log,
      decodePubSubCloudEvent(event({ data: b64(JSON.stringify(payload)) }), Received),
      't',
    );
    const line = log.lines[0]!;
    expect(line.fieldCount).toBe(50);
    expect((line.fields as string[]).length).toBe(20);
    expect((line.fields as string[]).every((f) => f.length <= 64)).toBe(true);
  });
});
