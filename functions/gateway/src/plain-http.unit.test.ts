import { describe, expect, it } from 'vitest';
import { absoluteUriFor, type PlainHttpSetting } from './plain-http.js';

describe('absoluteUriFor: GATEWAY_PLAIN_HTTP over the snapshot’s filtersDestinations', () => {
  it.each<[PlainHttpSetting, boolean | undefined, boolean]>([
    // auto (the default): the snapshot decides; an old snapshot without the field is pinned.
    ['auto', true, true],
    ['auto', false, false],
    ['auto', undefined, false],
    // An explicit setting overrides the snapshot for every upstream.
    ['pinned', true, false],
    ['pinned', undefined, false],
    ['absolute-uri', false, true],
    ['absolute-uri', undefined, true],
  ])('%s with filtersDestinations=%s → absolute form %s', (setting, filters, absolute) => {
    expect(absoluteUriFor(setting, filters)).toBe(absolute);
  });
});
