import { describe, expect, it } from 'vitest';
import { createApp } from './app.js';

describe('api', () => {
  it('answers /healthz', async () => {
    const res = await createApp({ version: 't' }).request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, version: 't' });
  });
});
