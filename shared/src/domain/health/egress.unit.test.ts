import { describe, expect, it } from 'vitest';
import { type EchoObservation, evaluateEgress, parseEchoBody } from './egress.js';

describe('evaluateEgress', () => {
  const callers = ['127.0.0.1', '10.8.0.2'];
  it.each<[string, EchoObservation, string | null]>([
    ['clean', { exitIp: '127.0.0.7', headers: {} }, null],
    ['IPv4-mapped exit address is the same address', { exitIp: '::ffff:127.0.0.7', headers: {} }, null],
    ['exit through another address', { exitIp: '127.0.0.9', headers: {} }, 'exit_ip_mismatch'],
    [
      'X-Forwarded-For with the caller',
      { exitIp: '127.0.0.7', headers: { 'x-forwarded-for': '127.0.0.1' } },
      'forwarded_header_leak',
    ],
    [
      'Forwarded with the caller',
      { exitIp: '127.0.0.7', headers: { forwarded: 'for=10.8.0.2;proto=http' } },
      'forwarded_header_leak',
    ],
    ['Via naming the caller', { exitIp: '127.0.0.7', headers: { via: '1.1 10.8.0.2' } }, 'via_header_leak'],
    [
      'X-Forwarded-For with someone else (the front end) is fine',
      { exitIp: '127.0.0.7', headers: { 'x-forwarded-for': '203.0.113.9' } },
      null,
    ],
  ])('%s', (_n, echo, problem) => {
    expect(evaluateEgress(echo, '127.0.0.7', callers)).toBe(problem);
  });
});

describe('evaluateEgress: a forwarding header leaks the caller only when it names that very address', () => {
  // The prober's (Cloud NAT) address, and headers an external proxy may send that name other addresses:
  // its own (Via), or a hop before it. One that merely contains the caller's digits is no leak.
  const callers = ['34.1.2.3'];
  it.each<[string, Record<string, string>, string | null]>([
    ['another address that starts with it', { 'x-forwarded-for': '34.1.2.30' }, null],
    ['another address that ends with it', { 'x-forwarded-for': '134.1.2.3' }, null],
    ['a proxy naming itself in Via, with its port', { via: '1.1 34.1.2.31:3128 (squid/6.10)' }, null],
    ['another address in Forwarded', { forwarded: 'for=34.1.2.39;proto=http' }, null],
    ['the caller among others', { 'x-forwarded-for': '10.0.0.1, 34.1.2.3' }, 'forwarded_header_leak'],
    ['the caller with a port', { via: '1.1 34.1.2.3:3128' }, 'via_header_leak'],
    ['the caller in Forwarded', { forwarded: 'for=34.1.2.3;proto=http' }, 'forwarded_header_leak'],
    [
      'the caller IPv4-mapped, bracketed with a port',
      { forwarded: 'for="[::ffff:34.1.2.3]:4711"' },
      'forwarded_header_leak',
    ],
  ])('%s', (_n, headers, problem) => {
    expect(evaluateEgress({ exitIp: '127.0.0.7', headers }, '127.0.0.7', callers)).toBe(problem);
  });

  it('an IPv6 caller: the same rule', () => {
    const v6 = ['2001:db8::1'];
    const at = (xff: string) =>
      evaluateEgress({ exitIp: '127.0.0.7', headers: { 'x-forwarded-for': xff } }, '127.0.0.7', v6);
    expect(at('2001:db8::10')).toBeNull();
    expect(at('2001:db8::1:5')).toBeNull();
    expect(at('[2001:DB8::1]:80')).toBe('forwarded_header_leak');
    expect(at('10.0.0.1, 2001:db8::1')).toBe('forwarded_header_leak');
  });
});

describe('evaluateEgress with exitIp: any (a residential or rotating gateway)', () => {
  const callers = ['127.0.0.1', '10.8.0.2'];
  it.each<[string, EchoObservation, string | null]>([
    ['exit through another address is fine', { exitIp: '203.0.113.50', headers: {} }, null],
    ['its own address is fine too', { exitIp: '127.0.0.7', headers: {} }, null],
    ["the prober's own address: not proxying", { exitIp: '10.8.0.2', headers: {} }, 'exit_ip_is_caller'],
    ['IPv4-mapped caller address', { exitIp: '::ffff:127.0.0.1', headers: {} }, 'exit_ip_is_caller'],
    [
      'header leaks still count',
      { exitIp: '203.0.113.50', headers: { 'x-forwarded-for': '10.8.0.2' } },
      'forwarded_header_leak',
    ],
  ])('%s', (_n, echo, problem) => {
    expect(evaluateEgress(echo, '127.0.0.7', callers, 'any')).toBe(problem);
  });
});

describe('parseEchoBody', () => {
  it('parses the echo endpoint response and lower-cases header names', () => {
    expect(parseEchoBody('{"ip":"1.2.3.4","headers":{"X-Forwarded-For":"a","n":1}}')).toEqual({
      exitIp: '1.2.3.4',
      headers: { 'x-forwarded-for': 'a' },
    });
  });
  it.each([null, '', 'nope', '{"ip":1}', '{"ip":"x","headers":null}'])('rejects %j', (b) => {
    expect(parseEchoBody(b)).toBeNull();
  });
});
