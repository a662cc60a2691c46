import { describe, expect, it } from 'vitest';
import { foreignCaller } from './local-caller.js';

describe('foreignCaller', () => {
  it.each([
    [{ host: '127.0.0.1:18195' }],
    [{ host: '127.0.0.5:18190' }],
    [{ host: 'localhost:18195' }],
    [{ host: '[::1]:18195' }],
    [{ host: 'LOCALHOST' }],
    [{}],
    [{ host: '127.0.0.1:18195', origin: 'http://127.0.0.1:18300' }],
  ])('takes %j (an SDK client, curl, a page of the plane itself)', (headers) => {
    expect(foreignCaller(headers)).toBeNull();
  });

  it.each([
    // DNS rebinding: a name of the attacker's answering 127.0.0.1.
    [{ host: 'rebind.attacker.example:18195' }, 'host'],
    [{ host: '10.0.0.5:18195' }, 'host'],
    [{ host: '127.0.0.1:18195', origin: 'https://attacker.example' }, 'web page'],
    [{ host: '127.0.0.1:18195', origin: 'null' }, 'web page'],
    [{ host: '127.0.0.1:18195', origin: 'not a url' }, 'web page'],
  ])('refuses %j', (headers, why) => {
    expect(foreignCaller(headers)).toContain(why);
  });
});
