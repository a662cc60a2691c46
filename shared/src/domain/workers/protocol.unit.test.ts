import { describe, expect, it } from 'vitest';
import { readableAt, type VersionedEntry } from './protocol.js';

const http: VersionedEntry = { protocol: 'http' };
const filtering: VersionedEntry = { protocol: 'http', filtersDestinations: true };
const excluding: VersionedEntry = { protocol: 'http', excludedRoutes: ['shop'] };
const socks: VersionedEntry = { protocol: 'socks5' };
const suspect: VersionedEntry = { protocol: 'http', suspect: true };

describe('readableAt: can a worker of this version read every entry of a snapshot', () => {
  it.each<[string, VersionedEntry[], number, boolean]>([
    ['plain entries, version 1', [http], 1, true],
    ['filtersDestinations needs 2', [http, filtering], 1, false],
    ['filtersDestinations at 2', [filtering], 2, true],
    ['excludedRoutes needs 3', [excluding], 2, false],
    ['excludedRoutes at 3', [excluding], 3, true],
    ['a SOCKS5 entry needs 4', [http, socks], 3, false],
    ['a SOCKS5 entry at 4', [socks, excluding, filtering], 4, true],
    ['suspect needs 5', [http, suspect], 4, false],
    ['suspect at 5', [suspect, socks, excluding, filtering], 5, true],
    ['no entries at all', [], 1, true],
  ])('%s', (_name, entries, version, readable) => {
    expect(readableAt(entries, version)).toBe(readable);
  });
});
