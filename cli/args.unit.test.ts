import { describe, expect, it } from 'vitest';
import { keyValues, outputOf, parseCommand, positiveInt } from './args.js';
import { UsageError } from './errors.js';

describe('keyValues', () => {
  it.each([
    [['pool=demo'], { pool: 'demo' }],
    [['pool=demo,region=us'], { pool: 'demo', region: 'us' }],
    [['pool=demo', 'region=us'], { pool: 'demo', region: 'us' }],
    [['empty='], { empty: '' }],
    [['url=a=b'], { url: 'a=b' }],
    [['pool=demo,,region=us'], { pool: 'demo', region: 'us' }],
    [['pool=demo, ,region=us,'], { pool: 'demo', region: 'us' }],
    // Trimmed around `=` on both sides: " demo" was sent, and matched nothing.
    [['pool = demo'], { pool: 'demo' }],
    [undefined, {}],
  ])('%j → %j', (raw, expected) => {
    expect(keyValues(raw, '--attr')).toEqual(expected);
  });

  // Every comma separates pairs: a value holding one is refused, not read as a filter nothing matches.
  it.each([
    [['novalue']],
    [['=x']],
    [['a=1', 'a=2']],
    [['label=a,b']],
    [['pool=demo,region']],
    // Names the API refuses; `__proto__` assigned on a plain object was dropped without a word.
    [['__proto__=x']],
    [['pool=demo,constructor=x']],
    [['prototype=x']],
    // Given, but with no pair at all (an unset shell variable): not "no filter".
    [['']],
    [[',']],
    [['', '']],
    // One of them empty (`-l pool=prod -l "$REGION"`): the region filter was dropped, the selector wider.
    [['pool=prod', '']],
    [['pool=prod', ' , ']],
  ])('refuses %j', (raw) => {
    expect(() => keyValues(raw, '--attr')).toThrow(UsageError);
  });
});

describe('parseCommand', () => {
  it('takes the global flags with the command’s own', () => {
    const p = parseCommand(['x', '--api', 'http://h', '-o', 'json', '--phase', 'Ready'], {
      phase: { type: 'string' },
    });
    expect(p).toEqual({ values: { api: 'http://h', output: 'json', phase: 'Ready' }, positionals: ['x'] });
  });

  it('refuses an unknown flag as a usage error', () => {
    expect(() => parseCommand(['--nope'], {})).toThrow(/Unknown option '--nope'/);
  });

  it('reads everything after "--" as an argument, even one that starts with "-"', () => {
    expect(parseCommand(['--', '-oFmBMq3'], {}).positionals).toEqual(['-oFmBMq3']);
  });
});

describe('outputOf / positiveInt', () => {
  it('defaults to table and refuses a format the command has not', () => {
    expect(outputOf({}, ['table', 'json'])).toBe('table');
    expect(() => outputOf({ output: 'env' }, ['table', 'json'])).toThrow(
      /--output must be one of table, json/,
    );
  });
  it.each([['0'], ['-1'], ['1.5'], ['x']])('refuses %s', (v) => {
    expect(() => positiveInt(v, '--ttl', 1)).toThrow(UsageError);
  });
  it('bounds a value by max, inclusive', () => {
    expect(positiveInt('60', '--interval', 1, 60)).toBe(60);
    expect(() => positiveInt('61', '--interval', 1, 60)).toThrow(
      /^--interval must be an integer from 1 to 60, got "61"$/,
    );
  });
});
