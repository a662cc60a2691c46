import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listenOn } from './listen.js';

describe('listenOn', () => {
  const servers: ReturnType<typeof createServer>[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => new Promise((done) => s.close(done))));
    servers.length = 0;
  });

  it('resolves the port bound; an error once listening (an accept failure) goes to onError, never uncaught', async () => {
    const seen: Error[] = [];
    const server = createServer();
    servers.push(server);
    const port = await listenOn(server, 0, '127.0.0.1', (err) => seen.push(err));
    expect(port).toBeGreaterThan(0);
    const enfile = Object.assign(new Error('accept ENFILE'), { code: 'ENFILE', syscall: 'accept' });
    // With no 'error' listener, emit throws (in a server: the process ends).
    expect(() => server.emit('error', enfile)).not.toThrow();
    expect(() => server.emit('error', enfile)).not.toThrow();
    expect(seen).toEqual([enfile, enfile]);
    expect(server.listening).toBe(true);
  });

  it('rejects the start on an error before listening (the port taken), and leaves no listener behind', async () => {
    const first = createServer();
    servers.push(first);
    const port = await listenOn(first, 0, '127.0.0.1', () => {});
    const second = createServer();
    await expect(listenOn(second, port, '127.0.0.1', () => {})).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(second.listenerCount('error')).toBe(0);
  });
});
