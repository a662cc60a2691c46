// The plane's own gateway must always be able to register: with a developer's WORKER_TOKENS (for a gateway
// of their own beside it) or GATEWAY_SERVICE_ACCOUNT set, it used to start with no token and fall back to
// a Google identity token, which fails offline — registered never, it carried none of the demo pool.
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseWorkerTokens } from '../../functions/api/src/workers/config.js';
import { loadLocalTokens, planeWorkerTokens } from './local-tokens.js';

const worker = { id: 'gw-local', token: 'plane-token-0123456789abcdef' };

describe('planeWorkerTokens', () => {
  it("without the developer's own: the plane's worker alone", () => {
    expect(planeWorkerTokens(undefined, worker)).toEqual({
      api: 'gw-local:plane-token-0123456789abcdef',
      gateway: worker.token,
    });
  });

  it("with the developer's own: theirs kept, the plane's added, and the API accepts the list", () => {
    const t = planeWorkerTokens(' gw-1:dev-token-0123456789abcdef ,', worker);
    expect(t.gateway).toBe(worker.token);
    expect(parseWorkerTokens(t.api)).toEqual([
      { workerId: 'gw-1', token: 'dev-token-0123456789abcdef' },
      { workerId: 'gw-local', token: worker.token },
    ]);
  });

  it("a list that names the plane worker itself is left as it is, and the gateway gets that entry's token", () => {
    expect(planeWorkerTokens('gw-1:a-0123456789abcdef, gw-local:dev-token-0123456789abcdef', worker)).toEqual(
      {
        gateway: 'dev-token-0123456789abcdef',
      },
    );
  });
});

describe('loadLocalTokens', () => {
  const dirs: string[] = [];
  const stateDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'local-tokens-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('keeps the tokens it made across starts, in a file only its owner reads', () => {
    const dir = stateDir();
    const made = loadLocalTokens(dir, () => {});
    expect(loadLocalTokens(dir, () => {})).toEqual(made);
    expect(statSync(join(dir, 'tokens.json')).mode & 0o777).toBe(0o600);
  });

  // A plane killed mid-write, or a hand edit: every start used to fail with a bare SyntaxError.
  it.each([[''], ['{"admin": "cut sh'], ['null'], ['{"admin": 1}']])(
    'replaces a tokens.json holding %j, saying so and naming the file',
    (text) => {
      const dir = stateDir();
      const file = join(dir, 'tokens.json');
      writeFileSync(file, text, { mode: 0o600 });
      const warnings: string[] = [];
      const tokens = loadLocalTokens(dir, (line) => warnings.push(line));
      expect(tokens).toEqual({ admin: expect.any(String), crawler: expect.any(String) });
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(tokens);
      expect(warnings).toEqual([expect.stringContaining(file)]);
    },
  );

  it('writes the new tokens private even over a file others could read', () => {
    const dir = stateDir();
    const file = join(dir, 'tokens.json');
    writeFileSync(file, '{}');
    chmodSync(file, 0o644); // whatever the umask
    loadLocalTokens(dir, () => {});
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('makes a kept tokens file private too', () => {
    const dir = stateDir();
    const file = join(dir, 'tokens.json');
    const made = loadLocalTokens(dir, () => {});
    chmodSync(file, 0o644);
    expect(loadLocalTokens(dir, () => {})).toEqual(made);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
