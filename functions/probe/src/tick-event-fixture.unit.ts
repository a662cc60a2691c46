// The CloudEvent the functions framework builds from a push of the Scheduler's probe tick: what the
// probe's entry point (event.ts onProbeEvent) is handed, for its unit tests.
export const tickEvent = (job: string) => ({
  specversion: '1.0',
  id: '11',
  type: 'google.cloud.pubsub.topic.v1.messagePublished',
  source: '//pubsub.googleapis.com/projects/demo/topics/ticks-probe',
  data: {
    message: {
      data: Buffer.from(JSON.stringify({ job })).toString('base64'),
      messageId: '11',
      publishTime: '2026-01-01T00:00:00.000Z',
    },
  },
});
