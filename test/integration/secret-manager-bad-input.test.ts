// Bad input never crashes the emulator: each case is a 400 INVALID_ARGUMENT in Google's error shape
// (through the real client where it can send it, raw HTTP where only a broken client could), and the
// emulator keeps serving afterwards.
import { connect } from 'node:net';
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAll } from '../../emulators/forward-proxy/testing.js';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { testProjectId } from '../support/emulators.js';

type Emulator = Awaited<ReturnType<typeof startSecretManagerEmulator>>;

describe('Secret Manager emulator under bad input', () => {
  const project = testProjectId();
  const secretName = `projects/${project}/secrets/target`;
  const errors: unknown[] = [];
  let emulator: Emulator;
  let client: SecretManagerServiceClient;

  beforeAll(async () => {
    emulator = await startSecretManagerEmulator({
      log: (severity, message, fields) => severity === 'ERROR' && errors.push({ message, fields }),
    });
    client = createSecretManagerClient(`${emulator.host}:${emulator.port}`);
    await client.createSecret({
      parent: `projects/${project}`,
      secretId: 'target',
      secret: { replication: { automatic: {} } },
    });
    await client.addSecretVersion({ parent: secretName, payload: { data: Buffer.from('still-here') } });
  });
  afterAll(async () => {
    // No request ever reached the 500 path.
    expect(errors).toEqual([]);
    await client.close();
    await emulator.stop();
  });

  const raw = (method: string, path: string, body?: string) =>
    fetch(`${emulator.url}${path}`, { method, body, headers: { 'content-type': 'application/json' } });

  it.each([
    ['malformed JSON', 'POST', `/v1/${secretName}:addVersion`, '{"payload": {"data": '],
    ['a JSON array body', 'POST', `/v1/projects/P/secrets?secretId=x`, '[1,2]'],
    ['an unknown field', 'POST', `/v1/${secretName}:addVersion`, '{"payload":{"data":"eA=="},"extra":1}'],
    [
      'payload.data that is not base64',
      'POST',
      `/v1/${secretName}:addVersion`,
      '{"payload":{"data":"not base64!"}}',
    ],
    ['a wrong type', 'POST', `/v1/${secretName}:addVersion`, '{"payload":{"data":42}}'],
    ['no replication', 'POST', `/v1/projects/P/secrets?secretId=x`, '{}'],
    [
      'a bad secret id',
      'POST',
      `/v1/projects/P/secrets?secretId=no%20spaces`,
      '{"replication":{"automatic":{}}}',
    ],
    ['no secret id', 'POST', `/v1/projects/P/secrets`, '{"replication":{"automatic":{}}}'],
    [
      'a bad topic name',
      'POST',
      `/v1/projects/P/secrets?secretId=y`,
      '{"replication":{"automatic":{}},"topics":[{"name":"t"}]}',
    ],
    ['a bad page size', 'GET', `/v1/projects/P/secrets?pageSize=-1`, undefined],
    ['a forged page token', 'GET', `/v1/projects/P/secrets?pageToken=bm9wZQ`, undefined],
    ['a bad version id', 'GET', `/v1/${secretName}/versions/..%2e:access`, undefined],
    ['broken percent-encoding', 'GET', `/v1/projects/%E0%A4%A/secrets`, undefined],
  ])('%s → 400 INVALID_ARGUMENT', async (_, method, path, body) => {
    const res = await raw(method, path.replace('projects/P', `projects/${project}`), body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { code: number; status: string; message: string } };
    expect(json.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(json.error.message.length).toBeGreaterThan(0);
  });

  it('a payload over 64 KiB → INVALID_ARGUMENT through the client', async () => {
    const err = await client
      .addSecretVersion({ parent: secretName, payload: { data: Buffer.alloc(64 * 1024 + 1, 0x61) } })
      .catch((e: { code: number; message: string }) => e);
    expect(err).toMatchObject({ code: 400 });
    expect(JSON.parse((err as { message: string }).message).error.status).toBe('INVALID_ARGUMENT');
  });

  it.each([
    ['empty data', { data: Buffer.alloc(0) }],
    ['an empty string', { data: '' }],
    ['no data at all', {}],
    ['a checksum but no data', { dataCrc32c: 0 }],
  ])(
    'an empty payload (%s) → INVALID_ARGUMENT through the client, and no version is added',
    async (_, payload) => {
      const [before] = await client.listSecretVersions({ parent: secretName });
      const err = await client
        .addSecretVersion({ parent: secretName, payload })
        .catch((e: { code: number; message: string }) => e);
      expect(err).toMatchObject({ code: 400 });
      const body = JSON.parse((err as { message: string }).message).error;
      expect(body).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(body.message).toContain('payload');
      const [after] = await client.listSecretVersions({ parent: secretName });
      expect(after).toHaveLength(before.length);
    },
  );

  it('exactly 64 KiB is accepted', async () => {
    const [v] = await client.addSecretVersion({
      parent: secretName,
      payload: { data: Buffer.alloc(64 * 1024, 0x62) },
    });
    expect(v.state).toBe('ENABLED');
  });

  it('a wrong dataCrc32c → INVALID_ARGUMENT through the client, and no version is added', async () => {
    const [before] = await client.listSecretVersions({ parent: secretName });
    const err = await client
      .addSecretVersion({ parent: secretName, payload: { data: Buffer.from('x'), dataCrc32c: 1 } })
      .catch((e: { code: number; message: string }) => e);
    expect(JSON.parse((err as { message: string }).message).error.status).toBe('INVALID_ARGUMENT');
    const [after] = await client.listSecretVersions({ parent: secretName });
    expect(after).toHaveLength(before.length);
  });

  it('a body far over the limit is refused without being buffered', async () => {
    const res = await raw(
      'POST',
      `/v1/${secretName}:addVersion`,
      `{"payload":{"data":"${'A'.repeat(2_000_000)}"}}`,
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
  });

  it('an unknown method or unmodelled feature is UNIMPLEMENTED, an unknown admin route a house-style 404', async () => {
    const res = await raw('POST', `/v1/${secretName}:setIamPolicy`, '{}');
    expect(res.status).toBe(501);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe('UNIMPLEMENTED');
    const ttl = await raw(
      'POST',
      `/v1/projects/${project}/secrets?secretId=ttl`,
      '{"replication":{"automatic":{}},"ttl":"3600s"}',
    );
    expect(ttl.status).toBe(501);
    expect(((await ttl.json()) as { error: { message: string } }).error.message).toContain('secret.ttl');
    const admin = await raw('POST', '/emulator/v1/nothing', '{}');
    expect(admin.status).toBe(404);
    expect(await admin.json()).toMatchObject({ error: 'not_found' });
    const denial = await raw(
      'PUT',
      `/emulator/v1/projects/${project}/secrets/target/denials`,
      '{"permissions":["nope"]}',
    );
    expect(denial.status).toBe(400);
    expect(await denial.json()).toMatchObject({ error: 'invalid_argument' });
  });

  it('a request target that is no URL → 400 INVALID_ARGUMENT on the raw socket, not a 500', async () => {
    const socket = connect(emulator.port, emulator.host);
    socket.write('GET http://[ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    const answer = await readAll(socket);
    expect(answer).toMatch(/^HTTP\/1.1 400 /);
    expect(answer).toContain('"status":"INVALID_ARGUMENT"');
  });

  it('keeps serving after all of it', async () => {
    const [res] = await client.accessSecretVersion({ name: `${secretName}/versions/1` });
    expect(Buffer.from(res.payload!.data as Uint8Array).toString()).toBe('still-here');
  });
});
