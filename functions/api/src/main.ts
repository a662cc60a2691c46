// Entry point of the Cloud Run service: wiring only.
import { serve } from '@hono/node-server';
import { createApp } from './app.js';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '0.0.0.0';
const app = createApp({ version: process.env.K_REVISION ?? 'local' });
const server = serve({ fetch: app.fetch, port, hostname: host }, (info) => {
  console.log(JSON.stringify({ severity: 'INFO', message: `api listening on ${host}:${info.port}` }));
});
const shutdown = () => server.close(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
