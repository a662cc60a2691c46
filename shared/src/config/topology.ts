// Typed access to shared/topology/*.json — the tables that the local plane and Terraform both read,
// so local and deployed wiring cannot drift.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { repoRoot } from './local-ports.js';

const Retry = z.object({
  minimumBackoffSeconds: z.number().int().positive(),
  maximumBackoffSeconds: z.number().int(),
});

export const TopicSpec = z.object({
  description: z.string(),
  consumer: z.string().nullable(),
  ackDeadlineSeconds: z.number().int().min(10).max(600).optional(),
  retry: Retry.optional(),
  localRetry: Retry.optional(),
  maxDeliveryAttempts: z.number().int().min(5).max(100).optional(),
});
export type TopicSpec = z.infer<typeof TopicSpec>;

export const PubSubTable = z.object({ deadLetterTopic: z.string(), topics: z.record(z.string(), TopicSpec) });
export type PubSubTable = z.infer<typeof PubSubTable>;

export const ScheduleJob = z.object({
  description: z.string(),
  schedule: z.string(),
  localEverySeconds: z.number().positive(),
  topic: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type ScheduleJob = z.infer<typeof ScheduleJob>;
export const ScheduleTable = z.object({ timeZone: z.string(), jobs: z.record(z.string(), ScheduleJob) });
export type ScheduleTable = z.infer<typeof ScheduleTable>;

export const FunctionSpec = z.object({
  source: z.string(),
  target: z.string(),
  topic: z.string(),
  retry: z.boolean(),
  timeoutSeconds: z.number().int().positive(),
  memory: z.string(),
});
export type FunctionSpec = z.infer<typeof FunctionSpec>;
export const FunctionTable = z.object({ functions: z.record(z.string(), FunctionSpec) });
export type FunctionTable = z.infer<typeof FunctionTable>;

const readTable = <T>(schema: z.ZodType<T>, name: string): T =>
  schema.parse(JSON.parse(readFileSync(`${repoRoot}shared/topology/${name}`, 'utf8')));

export const loadPubSubTable = (): PubSubTable => readTable(PubSubTable, 'pubsub.json');
export const loadScheduleTable = (): ScheduleTable => readTable(ScheduleTable, 'schedules.json');
export const loadFunctionTable = (): FunctionTable => readTable(FunctionTable, 'functions.json');
