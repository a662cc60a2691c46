// Decoding the CloudEvent a Pub/Sub-triggered function receives, without ever throwing: a message that
// cannot be decoded is poison (retrying cannot fix it), so the handler acks it and logs the failure.
// A payload field the schema does not know is dropped by a received schema (shared/src/messages: a newer
// publisher's, during a rollout) rather than refused; `unknownFields` names them, so that the handler can
// say so once per delivery (logUnknownFields) — by name, never by value.
// Two input shapes reach a handler (../shared/design/gcp-offline-recipes.md §1):
//  - the messagePublished CloudEvent: `ce.data.message.{data,attributes,messageId,publishTime}` (GCP's
//    Eventarc and the functions-framework's conversion of an emulator push both give this);
//  - the raw push body `{subscription, message}` with no `ce.data`, which the framework passes through
//    unconverted when the message has no `data` (attributes-only messages).
import type { z } from 'zod';
import type { Logger } from '../log/json-logger.js';
import { parseTraceparent, runInTrace, TRACEPARENT, type TraceContext } from '../log/trace-context.js';

export interface PubsubMessage {
  data?: string;
  attributes?: Record<string, string>;
  messageId?: string;
  publishTime?: string;
}

/** `data` of a google.cloud.pubsub.topic.v1.messagePublished CloudEvent. */
export interface MessagePublishedData {
  message: PubsubMessage;
  subscription?: string;
}

export type PushDecodeErrorKind = 'missing_data' | 'bad_base64' | 'bad_json' | 'schema';

export interface PushDecodeError {
  kind: PushDecodeErrorKind;
  message: string;
  /** The schema's issues (kind 'schema') or the parser's error (kind 'bad_json'). */
  cause?: unknown;
}

export type DecodedPush<T> =
  | {
      ok: true;
      value: T;
      messageId: string;
      attributes: Record<string, string>;
      publishTime?: string;
      /** Top-level payload fields the schema dropped (sorted names; [] for a strict schema, always). */
      unknownFields: string[];
    }
  | { ok: false; error: PushDecodeError; messageId?: string; attributes: Record<string, string> };

// Standard base64 with padding, as Pub/Sub encodes `data`; Buffer.from(…, 'base64') alone would
// silently skip garbage characters.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function messageOf(ce: unknown): PubsubMessage | undefined {
  if (typeof ce !== 'object' || ce === null) return undefined;
  const data = (ce as { data?: unknown }).data;
  const holder = typeof data === 'object' && data !== null ? data : ce;
  const message = (holder as { message?: unknown }).message;
  return typeof message === 'object' && message !== null ? (message as PubsubMessage) : undefined;
}

function stringRecord(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'string')) as Record<
    string,
    string
  >;
}

/**
 * The trace a delivery belongs to: its message's `traceparent` attribute (PubSubPublisher sets it on what is
 * published inside a trace), else the CloudEvent's own `traceparent` extension.
 */
export function traceOfDelivery(ce: unknown): TraceContext | undefined {
  const fromMessage = parseTraceparent(stringRecord(messageOf(ce)?.attributes)[TRACEPARENT]);
  if (fromMessage) return fromMessage;
  return typeof ce === 'object' && ce !== null
    ? parseTraceparent((ce as { traceparent?: unknown }).traceparent)
    : undefined;
}

/** Runs a delivery's handling inside its trace (trace-context.ts), when it has one. */
export function inDeliveryTrace<T>(ce: unknown, handle: () => T): T {
  return runInTrace(traceOfDelivery(ce), handle);
}

export function decodePubSubCloudEvent<S extends z.ZodType>(
  ce: unknown,
  schema: S,
): DecodedPush<z.output<S>> {
  const message = messageOf(ce);
  const attributes = stringRecord(message?.attributes);
  const messageId = typeof message?.messageId === 'string' ? message.messageId : undefined;
  const fail = (kind: PushDecodeErrorKind, text: string, cause?: unknown): DecodedPush<z.output<S>> => ({
    ok: false,
    error: { kind, message: text, ...(cause === undefined ? {} : { cause }) },
    ...(messageId === undefined ? {} : { messageId }),
    attributes,
  });

  const data = message?.data;
  if (typeof data !== 'string' || data.length === 0) {
    return fail('missing_data', message ? 'message has no data' : 'event carries no Pub/Sub message');
  }
  if (!BASE64.test(data)) return fail('bad_base64', 'message data is not base64');
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(Buffer.from(data, 'base64')));
  } catch (err) {
    return fail('bad_json', 'message data is not UTF-8 JSON', err);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) return fail('schema', 'message data does not match the schema', parsed.error.issues);
  return {
    ok: true,
    value: parsed.data,
    messageId: messageId ?? '',
    attributes,
    ...(typeof message?.publishTime === 'string' ? { publishTime: message.publishTime } : {}),
    unknownFields: droppedKeys(json, parsed.data),
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The payload's top-level keys that the parsed value does not carry: what a stripping schema dropped. */
function droppedKeys(json: unknown, value: unknown): string[] {
  if (!isRecord(json) || !isRecord(value)) return [];
  return Object.keys(json)
    .filter((k) => !Object.hasOwn(value, k))
    .sort();
}

/** Bounds on what one line repeats of a payload's field names (a publisher could send thousands). */
const MAX_NAMES = 20;
const MAX_NAME_LENGTH = 64;

/** How many of a refused message's schema issues its poison line names, and how much of each. */
const MAX_ISSUES = 10;
const MAX_ISSUE_LENGTH = 200;

/**
 * What a handler's poison line says of a message it acknowledges undecoded: why (`error`, the kind), the
 * message id, and for a schema failure which fields failed and how (`issues`: "path: message", the schema's
 * own words — field names and expectations, never the values sent). With the kind alone, an operator whose
 * hand-published replay (operations.md § Dead letters) was refused could not tell which field to mend.
 */
export function poisonFields(decoded: Extract<DecodedPush<unknown>, { ok: false }>): Record<string, unknown> {
  const { error, messageId } = decoded;
  const all = error.kind === 'schema' && Array.isArray(error.cause) ? issueLines(error.cause, [], '') : null;
  return {
    error: error.kind,
    ...(all
      ? { issues: all.slice(0, MAX_ISSUES).map((l) => l.slice(0, MAX_ISSUE_LENGTH)), issueCount: all.length }
      : {}),
    messageId,
  };
}

interface SchemaIssue {
  path?: PropertyKey[];
  message?: unknown;
  code?: string;
  /** invalid_union: each form's own issues (zod 4). */
  errors?: SchemaIssue[][];
}

/**
 * One line per issue. A union none of whose forms fits (the snapshot topic's: a tick or a worker's request)
 * is one issue, "Invalid input", with what each form refused inside it: those are named instead, by form.
 */
function issueLines(issues: SchemaIssue[], at: PropertyKey[], form: string): string[] {
  return issues.flatMap((i) => {
    const path = [...at, ...(i.path ?? [])];
    if (i.code === 'invalid_union' && Array.isArray(i.errors) && i.errors.length > 0) {
      return i.errors.flatMap((option, k) => issueLines(option, path, `${form}[form ${k + 1}] `));
    }
    return [`${form}${path.map(String).join('.') || '(message)'}: ${String(i.message)}`];
  });
}

/**
 * The one WARNING per delivery that a message carried fields this version does not know, and that they
 * were ignored: a newer publisher's while a deployment rolls out function by function (contract seed §7),
 * or a publisher's bug. Names only (bounded), never values: a field may hold anything.
 */
export function logUnknownFields(log: Logger, decoded: DecodedPush<unknown>, topic: string): void {
  if (!decoded.ok || decoded.unknownFields.length === 0) return;
  const names = decoded.unknownFields;
  log.warn('message fields this version does not know were ignored', {
    event: 'pubsub.unknown_fields',
    topic,
    fields: names.slice(0, MAX_NAMES).map((n) => n.slice(0, MAX_NAME_LENGTH)),
    fieldCount: names.length,
    messageId: decoded.messageId,
  });
}
